package signature

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

func pemPublic(t *testing.T, pub ed25519.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestTrustReadsAndRotates: keys from a directory as a mounted Secret holds them (the kubelet's ..
// entries left alone), several at once; a key added or removed is seen without a restart; a policy
// is parsed in any case, and anything else is refused.
func TestTrustReadsAndRotates(t *testing.T) {
	dir := t.TempDir()
	pub1, priv1 := newKey(t)
	pub2, priv2 := newKey(t)
	if err := os.Mkdir(filepath.Join(dir, "..2026_11_27"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.pub"), pemPublic(t, pub1), 0o600); err != nil {
		t.Fatal(err)
	}
	trust, err := NewTrust(ktesting.NewLogger(t, ktesting.DefaultConfig), Enforce, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	trust.now = func() time.Time { return now }
	if _, _, err := trust.Verify(stored(t, priv1), "florin", 0); err != nil || !trust.Enforce() {
		t.Fatalf("the first key: %v", err)
	}
	if _, _, err := trust.Verify(stored(t, priv2), "florin", 0); err == nil {
		t.Fatal("a key not yet trusted verified")
	}
	// Rotation: the new key added beside the old one, then the old one removed.
	if err := os.WriteFile(filepath.Join(dir, "new.pub"), pemPublic(t, pub2), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recheck)
	for _, k := range []ed25519.PrivateKey{priv1, priv2} {
		if _, _, err := trust.Verify(stored(t, k), "florin", 0); err != nil {
			t.Errorf("during rotation: %v", err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "old.pub")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recheck)
	if _, _, err := trust.Verify(stored(t, priv1), "florin", 0); err == nil {
		t.Error("a removed key still verifies")
	}
	// Every key removed: nothing is trusted any more (a revocation), said in the log.
	if err := os.Remove(filepath.Join(dir, "new.pub")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recheck)
	if _, _, err := trust.Verify(stored(t, priv2), "florin", 0); err == nil {
		t.Error("with every key file removed, a signature still verifies")
	}
	if _, err := NewTrust(ktesting.NewLogger(t, ktesting.DefaultConfig), Enforce, []string{t.TempDir()}); err == nil {
		t.Error("a directory without keys was accepted")
	}
	if p, err := ParsePolicy("enforce"); err != nil || p != Enforce {
		t.Errorf("ParsePolicy(enforce) = %v, %v", p, err)
	}
	if p, err := ParsePolicy("strict"); err != nil || p != Strict {
		t.Errorf("ParsePolicy(strict) = %v, %v", p, err)
	}
	if _, err := ParsePolicy("Lax"); err == nil {
		t.Error("ParsePolicy(Lax) accepted")
	}
}

// TestTrustFailsClosed: a key file edited into one that does not parse trusts no key (the edit may be
// a revocation) until it parses again; Strict enforces.
func TestTrustFailsClosed(t *testing.T) {
	dir := t.TempDir()
	pub1, priv1 := newKey(t)
	file := filepath.Join(dir, "keys.pub")
	if err := os.WriteFile(file, pemPublic(t, pub1), 0o600); err != nil {
		t.Fatal(err)
	}
	trust, err := NewTrust(ktesting.NewLogger(t, ktesting.DefaultConfig), Strict, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !trust.Enforce() {
		t.Error("Strict does not enforce")
	}
	now := time.Now()
	trust.now = func() time.Time { return now }
	if _, _, err := trust.Verify(stored(t, priv1), "florin", 0); !errors.Is(err, ErrNoClaims) {
		t.Errorf("Strict, without claims: %v, want %v", err, ErrNoClaims)
	}
	claimed := storedWith(t, priv1, &Claims{Targets: []string{"florin"}, Serial: 3})
	if _, _, err := trust.Verify(claimed, "florin", 0); err != nil {
		t.Fatalf("Strict, with claims: %v", err)
	}
	if err := os.WriteFile(file, append(pemPublic(t, pub1), []byte("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recheck)
	if _, _, err := trust.Verify(claimed, "florin", 0); err == nil {
		t.Error("a key file that does not parse kept the keys read before")
	}
	if err := os.WriteFile(file, pemPublic(t, pub1), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recheck)
	if _, _, err := trust.Verify(claimed, "florin", 0); err != nil {
		t.Errorf("the key file parses again: %v", err)
	}
}

// TestParsePrivateKey reads the PKCS #8 form openssl writes.
func TestParsePrivateKey(t *testing.T) {
	_, priv := newKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil || !got.Equal(priv) {
		t.Errorf("ParsePrivateKey: %v", err)
	}
}
