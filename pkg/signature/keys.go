package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// Policy is what the edge does with an object that is not signed by a key it trusts.
type Policy string

const (
	// Off verifies nothing.
	Off Policy = "Off"
	// Warn writes it anyway, and says so.
	Warn Policy = "Warn"
	// Enforce does not write it: the edge keeps the last verified version.
	Enforce Policy = "Enforce"
	// Strict is Enforce, and every signature must carry claims naming the edge's sync target and a
	// serial (kubectl kubestellar sign --targets --serial): another site's signed object, or an
	// older signed version, is not applied.
	Strict Policy = "Strict"
)

// ParsePolicy reads a policy's name.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range []Policy{Off, Warn, Enforce, Strict} {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is not a signature policy (Off, Warn, Enforce or Strict)", s)
}

// recheck is how often the key files are looked at for a change.
const recheck = 10 * time.Second

// Trust is the public keys the edge trusts, read from PEM files (PKIX "PUBLIC KEY" blocks, several
// per file) or directories of them (a Secret mounted as a volume: entries whose names start with ".."
// are the kubelet's own), and read again when one changes, so that a key can be added before the
// signer rotates and removed after, without a restart.
type Trust struct {
	policy Policy
	paths  []string
	now    func() time.Time
	logger klog.Logger

	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	stamp   string
	checked time.Time
}

// NewTrust reads the keys at paths for policy; an error when none can be read (under Warn or
// Enforce, a syncer that trusts no key would refuse or warn about everything). Key changes are
// logged to logger.
func NewTrust(logger klog.Logger, policy Policy, paths []string) (*Trust, error) {
	t := &Trust{policy: policy, paths: paths, now: time.Now, logger: logger, checked: time.Now()}
	files, err := keyFiles(paths)
	if err == nil {
		err = t.loadLocked(files) // nothing shares t yet
	}
	if errors.Is(err, errNoKey) {
		return nil, fmt.Errorf("no ed25519 public key in %s", strings.Join(paths, ", "))
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Enforce tells whether an object that does not verify is left unwritten.
func (t *Trust) Enforce() bool { return t.policy == Enforce || t.policy == Strict }

// Verify verifies obj, applied at the sync target target whose copy there records appliedSerial,
// against the keys trusted now (see the package's Verify).
func (t *Trust) Verify(obj *unstructured.Unstructured, target string, appliedSerial int64) (*unstructured.Unstructured, string, error) {
	return Verify(obj, t.current(), Expect{Target: target, AppliedSerial: appliedSerial, RequireClaims: t.policy == Strict})
}

// current is the trusted keys, read again when the files changed (looked at every recheck). Files
// left without any key trust nothing (a revocation); so does a key file that cannot be read or
// parsed, failing closed (the edit may be the revocation of a key), until the files read again.
func (t *Trust) current() map[string]ed25519.PublicKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now := t.now(); now.Sub(t.checked) >= recheck {
		t.checked = now
		files, err := keyFiles(t.paths)
		if err == nil && stamp(files) == t.stamp {
			return t.keys
		}
		if err == nil {
			err = t.loadLocked(files)
		}
		switch {
		case errors.Is(err, errNoKey):
			t.keys = map[string]ed25519.PublicKey{}
			t.logger.Error(err, "No signature key left in --signature-keys: trusting no key")
		case err != nil:
			t.keys = map[string]ed25519.PublicKey{}
			t.logger.Error(err, "Could not read the signature keys again: trusting no key until they read", "paths", t.paths)
		default:
			t.logger.Info("Signature keys read again", "keyIDs", ids(t.keys))
		}
	}
	return t.keys
}

// errNoKey: the key files hold no key.
var errNoKey = errors.New("no key")

// ids are the keys' ids, sorted.
func ids(keys map[string]ed25519.PublicKey) []string {
	out := make([]string, 0, len(keys))
	for id := range keys {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// loadLocked reads the key files; t.mu is held.
func (t *Trust) loadLocked(files []string) error {
	st := stamp(files) // before reading: a change while reading is seen at the next look
	keys := map[string]ed25519.PublicKey{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("signature key %s: %w", f, err)
		}
		if err := parseKeys(data, keys); err != nil {
			return fmt.Errorf("signature key %s: %w", f, err)
		}
	}
	t.stamp = st
	if len(keys) == 0 {
		return errNoKey
	}
	t.keys = keys
	return nil
}

// keyFiles are the files at paths, a directory standing for its regular files.
func keyFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("signature keys: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("signature keys: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") { // hidden, and the kubelet's own ..data and ..<time>
				continue
			}
			if st, err := os.Stat(filepath.Join(p, e.Name())); err == nil && st.Mode().IsRegular() {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// stamp is the files' names, sizes and modification times: what changes when one is replaced.
func stamp(files []string) string {
	var b strings.Builder
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

// CheckPublicKeys tells whether data holds PEM ed25519 public keys the syncer can read (syncer-gen
// checks --signature-public-keys with it).
func CheckPublicKeys(data []byte) error { return parseKeys(data, map[string]ed25519.PublicKey{}) }

// parseKeys adds the ed25519 public keys of the PEM blocks in data to keys.
func parseKeys(data []byte, keys map[string]ed25519.PublicKey) error {
	found := false
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			if found && len(bytes.TrimSpace(data)) > 0 {
				// A block that does not decode (an edit gone wrong) is no key dropped quietly.
				return errors.New("text after the last PEM block that is not one")
			}
			break
		}
		if block.Type != "PUBLIC KEY" {
			continue
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return err
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("a %T, not an ed25519 key", k)
		}
		keys[KeyID(pub)] = pub
		found = true
	}
	if !found {
		return errors.New("no PEM PUBLIC KEY block")
	}
	return nil
}

// ParsePrivateKey reads an ed25519 private key from PEM (PKCS #8, "PRIVATE KEY", as openssl genpkey
// -algorithm ed25519 writes it).
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM PRIVATE KEY block")
		}
		if block.Type != "PRIVATE KEY" {
			continue
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("a %T, not an ed25519 key", k)
		}
		return priv, nil
	}
}
