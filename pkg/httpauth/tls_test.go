package httpauth

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// TestTLSConfigReloads: a certificate directory is read again when its files change (a renewal), and
// a pair half written keeps the last good one in service.
func TestTLSConfigReloads(t *testing.T) {
	dir := t.TempDir()
	write := func(host string, stamp time.Time) {
		crt, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, stamp, stamp); err != nil {
				t.Fatal(err)
			}
		}
	}
	served := func(cfg *tls.Config) string {
		cert, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return string(cert.Certificate[0])
	}
	if _, err := TLSConfig(dir, "x"); err == nil {
		t.Error("TLSConfig of an empty directory: no error")
	}
	write("first", time.Unix(1000, 0))
	cfg, err := TLSConfig(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	first := served(cfg)
	write("second", time.Unix(2000, 0))
	second := served(cfg)
	if second == first {
		t.Error("a renewed certificate was not served")
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if served(cfg) != second {
		t.Error("a half-written renewal replaced the certificate in service")
	}

	self, err := TLSConfig("", "syncer.example")
	if err != nil || len(self.Certificates) != 1 {
		t.Fatalf("self-signed: %v", err)
	}
}
