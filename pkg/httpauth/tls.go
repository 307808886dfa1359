package httpauth

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// TLSConfig is the metrics address's TLS: the certificate in dir (tls.crt, tls.key), read again
// whenever either file changes, or, with dir empty, one generated now for host, self-signed.
func TLSConfig(dir, host string) (*tls.Config, error) {
	if dir == "" {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("generating a self-signed certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
	}
	r := &reloader{crt: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}
	if _, err := r.get(nil); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get}, nil
}

// reloader serves a certificate from two files, read again when their modification times change.
type reloader struct {
	crt, key string

	mu      sync.Mutex
	stamp   [2]time.Time
	current *tls.Certificate
}

func (r *reloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var stamp [2]time.Time
	for i, p := range []string{r.crt, r.key} {
		st, err := os.Stat(p)
		if err != nil {
			return r.keep(fmt.Errorf("metrics certificate: %w", err))
		}
		stamp[i] = st.ModTime()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil && stamp == r.stamp {
		return r.current, nil
	}
	cert, err := tls.LoadX509KeyPair(r.crt, r.key)
	if err != nil {
		if r.current != nil {
			return r.current, nil // a renewal half written: keep serving the last good pair
		}
		return nil, fmt.Errorf("metrics certificate %s, %s: %w", r.crt, r.key, err)
	}
	r.current, r.stamp = &cert, stamp
	return r.current, nil
}

// keep serves the last good certificate when the files cannot be read for now.
func (r *reloader) keep(err error) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		return r.current, nil
	}
	return nil, err
}
