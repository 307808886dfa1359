package testenv

import "path/filepath"

const upstreamControllerManager = "kube-controller-manager-upstream"

// startUpstreamControllers runs a second kube-controller-manager, against upstream, with only the
// controllers that every real cluster runs for its namespaces (and that kcp runs in every workspace):
// they put the ConfigMap kube-root-ca.crt and the ServiceAccount default in every namespace and give
// ServiceAccounts their tokens. Downstream's controller manager runs them among all others.
func (e *Env) startUpstreamControllers(p *pki) error {
	kc := e.Upstream.Kubeconfig
	return e.spawn(upstreamControllerManager, filepath.Join(e.opts.BinDir, "kube-controller-manager"),
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--service-account-private-key-file="+p.saKey, "--root-ca-file="+p.caCert, "--use-service-account-credentials=true",
		"--controllers=root-ca-cert-publisher,serviceaccount,serviceaccount-token")
}
