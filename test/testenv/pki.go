package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// AdminToken authenticates as a member of system:masters (static token file).
const AdminToken = "testenv-admin-token"

// pki holds the paths of the generated keys and certificates.
type pki struct {
	dir                      string
	caCert, caKey            string
	servingCert, servingKey  string
	adminCert, adminKey      string
	saPub, saKey, tokensFile string
	// The node's client certificates (Options.Node): the kubelet's (system:node:<name> in
	// system:nodes, for the Node authorizer), kube-proxy's and kube-scheduler's (the users the
	// default RBAC bindings name).
	kubeletCert, kubeletKey     string
	proxyCert, proxyKey         string
	schedulerCert, schedulerKey string
}

// serviceIP is the kubernetes Service's ClusterIP: the first address of --service-cluster-ip-range.
const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"
)

// servingNames are the names the serving certificate covers besides its IP addresses: those by which
// a client on this machine (localhost) and a pod (the kubernetes Service) reach an apiserver.
var servingNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	return key, der, err
}

// generatePKI writes a CA, a serving certificate, an admin client certificate (system:masters), a
// service-account signing key pair and a static token file, and with node the node's client
// certificates. The serving certificate covers 127.0.0.1, the kubernetes Service's IP, ips (the bed's
// address) and servingNames.
func generatePKI(dir string, ips []string, node string) (*pki, error) {
	p := &pki{dir: dir,
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "serving.crt"), servingKey: filepath.Join(dir, "serving.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saPub: filepath.Join(dir, "sa.pub"), saKey: filepath.Join(dir, "sa.key"), tokensFile: filepath.Join(dir, "tokens.csv"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour)
	caKey, caKeyDER, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testenv-ca"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writePEM(p.caCert, "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	if err := writePEM(p.caKey, "EC PRIVATE KEY", caKeyDER); err != nil {
		return nil, err
	}
	issue := func(serial int64, tmpl *x509.Certificate, certPath, keyPath string) error {
		key, keyDER, err := newKey()
		if err != nil {
			return err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now, now.Add(10*365*24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "EC PRIVATE KEY", keyDER)
	}
	servingIPs := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}
	for _, ip := range ips {
		if parsed := net.ParseIP(ip); parsed != nil && !parsed.IsLoopback() {
			servingIPs = append(servingIPs, parsed)
		}
	}
	if err := issue(2, &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: servingNames,
		IPAddresses: servingIPs, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		p.servingCert, p.servingKey); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	type client struct {
		name, cert, key string
		subject         pkix.Name
	}
	clients := []client{{"admin", p.adminCert, p.adminKey, pkix.Name{CommonName: "testenv-admin", Organization: []string{"system:masters"}}}}
	if node != "" {
		p.kubeletCert, p.kubeletKey = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
		p.proxyCert, p.proxyKey = filepath.Join(dir, "kube-proxy.crt"), filepath.Join(dir, "kube-proxy.key")
		p.schedulerCert, p.schedulerKey = filepath.Join(dir, "kube-scheduler.crt"), filepath.Join(dir, "kube-scheduler.key")
		clients = append(clients,
			client{"kubelet", p.kubeletCert, p.kubeletKey, pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}},
			client{"kube-proxy", p.proxyCert, p.proxyKey, pkix.Name{CommonName: "system:kube-proxy"}},
			client{"kube-scheduler", p.schedulerCert, p.schedulerKey, pkix.Name{CommonName: "system:kube-scheduler"}})
	}
	for i, c := range clients {
		if err := issue(int64(3+i), &x509.Certificate{Subject: c.subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
			c.cert, c.key); err != nil {
			return nil, fmt.Errorf("%s certificate: %w", c.name, err)
		}
	}
	saKey, saKeyDER, err := newKey()
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.saKey, "EC PRIVATE KEY", saKeyDER); err != nil {
		return nil, err
	}
	if err := writePEM(p.saPub, "PUBLIC KEY", saPubDER); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.tokensFile, []byte(AdminToken+",testenv-admin,uid-testenv-admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}
