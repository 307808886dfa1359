package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// StartEdge starts one more kube-apiserver, a second edge cluster for a test that needs two sync
// targets each with an edge of its own: on the environment's etcd (under its own prefix), PKI and
// address, with RBAC, and no controllers, node or scheduler (what runs there, the test writes). name
// must be unique in the environment; the server runs until Stop.
func (e *Env) StartEdge(ctx context.Context, name string) (*Server, error) {
	if e.Downstream == nil || e.Downstream.pki == nil || e.Downstream.pki.servingCert == "" || e.EtcdURL == "" {
		return nil, fmt.Errorf("testenv: StartEdge needs an environment this process started")
	}
	p := e.Downstream.pki
	ports, err := freePorts(e.Address, 1)
	if err != nil {
		return nil, err
	}
	s := &Server{Name: name, URL: fmt.Sprintf("https://%s:%d", e.Address, ports[0]), Kubeconfig: filepath.Join(e.Dir, name+".kubeconfig"),
		BearerToken: AdminToken, pki: p}
	args := append(e.apiserverArgs(name, ports[0], p), "--endpoint-reconciler-type=none", "--authorization-mode=RBAC")
	if err := e.spawn("kube-apiserver-"+name, filepath.Join(e.opts.BinDir, "kube-apiserver"), args...); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(s); err != nil {
		return nil, err
	}
	if err := e.waitReady(ctx, s, 60*time.Second); err != nil {
		return nil, err
	}
	fmt.Fprintf(e.opts.Log, "testenv: %s kube-apiserver ready at %s\n", name, s.URL)
	return s, e.writePIDs()
}
