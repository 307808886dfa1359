package bootstrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckWritable: a path that can be written passes and is left exactly as it was (a new file is
// not left behind, an existing one keeps its content and modification time); one that cannot fails
// with one line naming the path and the reason, and creates nothing.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.yaml")
	if err := os.WriteFile(existing, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(existing, old, old); err != nil {
		t.Fatal(err)
	}
	aFile := filepath.Join(dir, "a-file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readOnlyDir := filepath.Join(dir, "read-only")
	if err := os.Mkdir(readOnlyDir, 0o500); err != nil {
		t.Fatal(err)
	}
	readOnlyFile := filepath.Join(dir, "read-only.yaml")
	if err := os.WriteFile(readOnlyFile, []byte("kept"), 0o400); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)

	for _, tc := range []struct {
		name, path string
		wantErr    string // "" for none
		needsUser  bool   // permissions do not stop root
	}{
		{name: "standard output", path: "-"},
		{name: "new file", path: filepath.Join(dir, "new.yaml")},
		{name: "existing file", path: existing},
		{name: "missing directory", path: filepath.Join(dir, "missing", "m.yaml"), wantErr: "no such file or directory"},
		{name: "parent is a file", path: filepath.Join(aFile, "m.yaml"), wantErr: "not a directory"},
		{name: "a directory", path: dir, wantErr: "is a directory"},
		{name: "read-only directory", path: filepath.Join(readOnlyDir, "m.yaml"), wantErr: "permission denied", needsUser: true},
		{name: "read-only file", path: readOnlyFile, wantErr: "permission denied", needsUser: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsUser && os.Geteuid() == 0 {
				return // root passes permissions: checked by the run as nobody below
			}
			err := CheckWritable(tc.path)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "":
				want := "cannot write the manifest to " + tc.path + " (-o): " + tc.wantErr
				if err == nil || err.Error() != want {
					t.Fatalf("error %v, want %q", err, want)
				}
			}
			if got := listDir(t, dir); got != before {
				t.Errorf("the directory changed:\n%s\nwant:\n%s", got, before)
			}
			if _, err := os.Stat(filepath.Join(dir, "new.yaml")); !os.IsNotExist(err) {
				t.Errorf("the checked new file is left behind (%v)", err)
			}
		})
	}
	if data, _ := os.ReadFile(existing); string(data) != "kept" {
		t.Errorf("existing file content %q", data)
	}
	if os.Geteuid() == 0 {
		runAsNobody(t, "TestCheckWritable", "read-only_directory", "read-only_file")
	}
	if fi, err := os.Stat(existing); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("existing file modified: %v %v", fi.ModTime(), err)
	}
}

// runAsNobody runs test again in a copy of this test binary as user nobody (65534), where file
// permissions apply, and fails unless it passed and ran each subtest named in ran.
func runAsNobody(t *testing.T, test string, ran ...string) {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "as-nobody") // not under t.TempDir's 0700 parent: nobody must reach the copy
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // for another user to run the copy
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test")
	if err := os.WriteFile(bin, self, 0o755); err != nil { //nolint:gosec // an executable, for another user
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+test+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp", "HOME=/tmp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as nobody: %v\n%s", test, err, out)
	}
	for _, sub := range ran {
		if want := "--- PASS: " + test + "/" + sub + " "; !strings.Contains(string(out), want) {
			t.Errorf("%s as nobody did not pass %s:\n%s", test, sub, out)
		}
	}
}

// listDir is the names, sizes and modes of the entries in dir, one a line.
func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s %d %s", e.Name(), fi.Mode(), fi.Size(), fi.ModTime()))
	}
	return strings.Join(lines, "\n")
}

// TestCheckWritableFor names the output and its flag.
func TestCheckWritableFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "values.yaml")
	err := CheckWritableFor(path, "the Helm values", "--helm-values")
	want := "cannot write the Helm values to " + path + " (--helm-values): no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
