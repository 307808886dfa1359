package bootstrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CheckWritable tells whether the manifest can be written to path ("-" is standard output), without
// changing anything there: syncer-gen checks it before it changes anything upstream, since a run
// rotates the syncer's token and a manifest that cannot be written would leave nobody with the new
// one. An existing file is opened for appending and closed (not truncated: its content and times stay
// as they are); a new one is created exclusively and removed at once, so that no stray file is left
// when the run fails later. The error is one line naming the path and the reason.
func CheckWritable(path string) error {
	return CheckWritableFor(path, "the manifest", "-o")
}

// CheckWritableFor is CheckWritable for another output: what names its content in the error, flag
// the flag that names the path (CheckWritableFor(path, "the Helm values", "--helm-values")).
func CheckWritableFor(path, what, flag string) error {
	if path == "-" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		created = err == nil
	}
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err // the message names the path already
		}
		return fmt.Errorf("cannot write %s to %s (%s): %w", what, path, flag, err)
	}
	closeErr := f.Close()
	if created {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("removing %s after checking that it can be written: %w", path, err)
		}
	}
	if closeErr != nil {
		return fmt.Errorf("cannot write %s to %s (%s): %w", what, path, flag, closeErr)
	}
	return nil
}
