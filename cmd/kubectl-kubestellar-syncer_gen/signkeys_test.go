package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignatureKeysFlags: --signature-policy Enforce with a public key file puts its PEM in the
// manifest's keys; a policy without keys, keys without a policy, an unknown policy and a file that
// holds no ed25519 public key are refused, naming the flag.
func TestSignatureKeysFlags(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "key.pub"), filepath.Join(dir, "bad.pub")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	for f, data := range map[string][]byte{good: pemKey, bad: []byte("not a key\n")} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		policy  string
		files   []string
		wantErr string
	}{
		{"enforce", []string{good}, ""},
		{"Off", nil, ""},
		{"Enforce", nil, "--signature-policy Enforce needs --signature-public-keys"},
		{"Off", []string{good}, "--signature-public-keys needs --signature-policy Warn or Enforce"},
		{"Lax", nil, `--signature-policy: "Lax" is not a signature policy`},
		{"Warn", []string{good, bad}, "--signature-public-keys " + bad + ": no PEM PUBLIC KEY block"},
	} {
		o := newOptions()
		o.SignaturePolicy, o.signatureKeyFiles = tc.policy, tc.files
		err := o.readSignatureKeys()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s %v: %v", tc.policy, tc.files, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s %v: %v, want %q", tc.policy, tc.files, err, tc.wantErr)
		case tc.wantErr == "" && len(tc.files) > 0 && (o.SignaturePolicy != "Enforce" || !strings.Contains(string(o.SignatureKeys), string(pemKey))):
			t.Errorf("%s %v: policy %q, keys %q", tc.policy, tc.files, o.SignaturePolicy, o.SignatureKeys)
		}
	}
}
