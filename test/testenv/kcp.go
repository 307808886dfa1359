package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KCPBinaryNames are the binaries Options.KCP needs in Options.KCPBinDir (`make kcp-bins`).
var KCPBinaryNames = []string{"kcp", "crd-puller"}

// MissingKCPBinaries lists the kcp binaries absent from dir.
func MissingKCPBinaries(dir string) []string {
	var missing []string
	for _, b := range KCPBinaryNames {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			missing = append(missing, b)
		}
	}
	return missing
}

// KCP is the environment's kcp server (Options.KCP): one shard with its embedded etcd, state in
// Dir/kcp, log in Dir/logs/kcp.log.
type KCP struct {
	// URL is the server's base URL, https://<Env.Address>:<port>; a workspace is served at
	// URL + "/clusters/" + its path.
	URL string
	// RootDir is kcp's --root-directory.
	RootDir string
	// AdminKubeconfig is the kubeconfig kcp writes at start-up (context "root" is the root workspace,
	// user kcp-admin with a token). The token changes at every start of kcp: kubeconfigs derived from it
	// are only good for the run that wrote them.
	AdminKubeconfig string
	binDir          string
	env             *Env
	// kubeconfigs are those WriteKubeconfig wrote (file -> logical cluster path), written again with
	// the new admin token after a restart (RestartKCPAfter).
	kubeconfigs map[string]string
}

// Workspace is a kcp workspace under root.
type Workspace struct {
	// Name is the workspace's name in root, e.g. "mailbox".
	Name string
	// Path is its logical cluster path, e.g. "root:mailbox".
	Path string
	// Cluster is its logical cluster name (spec.cluster of the Workspace object), which objects carry
	// in their kcp.io/cluster annotation.
	Cluster string
	// URL is the server URL of the workspace, KCP.URL + "/clusters/" + Path.
	URL string
	// Kubeconfig is an admin kubeconfig whose server is URL.
	Kubeconfig string
}

// RESTConfig returns an admin client config for the workspace.
func (w *Workspace) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", w.Kubeconfig)
}

// Server is the workspace as a Server: its URL, admin kubeconfig, kcp's CA and admin token, so that
// tests written against a kube-apiserver run against the workspace unchanged.
func (w *Workspace) Server() (*Server, error) {
	cfg, err := clientcmd.LoadFromFile(w.Kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return nil, fmt.Errorf("testenv: %s has no usable current context", w.Kubeconfig)
	}
	ca := strings.TrimSuffix(w.Kubeconfig, ".kubeconfig") + "-ca.crt"
	if err := os.WriteFile(ca, cfg.Clusters[ctx.Cluster].CertificateAuthorityData, 0o600); err != nil {
		return nil, err
	}
	return &Server{Name: "kcp " + w.Path, URL: w.URL, Kubeconfig: w.Kubeconfig, BearerToken: cfg.AuthInfos[ctx.AuthInfo].Token,
		pki: &pki{caCert: ca}}, nil
}

var workspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// startKCP starts kcp on the given secure and embedded-etcd ports; waitKCP waits for it. kcp serves
// the environment's serving certificate, followed by its CA (kcp writes what it serves as the CA of
// its admin kubeconfig): it covers 127.0.0.1 as well as Env.Address, where kcp listens, so that a
// test's proxy on 127.0.0.1 in front of kcp is trusted as one in front of a kube-apiserver is (kcp's
// own certificate would name its bind address only).
func (e *Env) startKCP(ports []int, p *pki) error {
	k := &KCP{
		URL:     fmt.Sprintf("https://%s:%d", e.Address, ports[0]),
		RootDir: filepath.Join(e.Dir, "kcp"),
		binDir:  e.opts.KCPBinDir,
		env:     e,
	}
	k.AdminKubeconfig = filepath.Join(k.RootDir, "admin.kubeconfig")
	bundle := filepath.Join(p.dir, "kcp-serving.crt")
	if err := concatFiles(bundle, p.servingCert, p.caCert); err != nil {
		return err
	}
	if err := e.spawn("kcp", filepath.Join(k.binDir, "kcp"), "start",
		"--tls-cert-file="+bundle, "--tls-private-key-file="+p.servingKey,
		"--root-directory="+k.RootDir, "--bind-address="+e.Address, "--secure-port="+strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port="+strconv.Itoa(ports[1]), "--embedded-etcd-peer-port="+strconv.Itoa(ports[2])); err != nil {
		return err
	}
	e.KCP = k
	return nil
}

// concatFiles writes the files' contents, one after the other, to out.
func concatFiles(out string, files ...string) error {
	var data []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		data = append(data, b...)
	}
	return os.WriteFile(out, data, 0o600)
}

// waitKCP waits until kcp answers /readyz to its admin (a fresh root directory takes about 25s on 2 cores).
func (e *Env) waitKCP(ctx context.Context, started time.Time) error {
	k := e.KCP
	err := k.wait(ctx, "kcp /readyz", 3*time.Minute, func(ctx context.Context) error {
		cfg, err := k.RESTConfig("root")
		if err != nil {
			return err // kcp has not written its admin kubeconfig yet
		}
		cfg.Timeout = 2 * time.Second
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	k.logf("testenv: kcp ready at %s (%.1fs after its start)", k.URL, time.Since(started).Seconds())
	return nil
}

// loadKCP returns the kcp of a state folder written by an earlier Start, or nil if it has none.
func loadKCP(e *Env) (*KCP, error) {
	k := &KCP{RootDir: filepath.Join(e.Dir, "kcp"), env: e}
	k.AdminKubeconfig = filepath.Join(k.RootDir, "admin.kubeconfig")
	cfg, err := clientcmd.LoadFromFile(k.AdminKubeconfig)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	base, ok := cfg.Contexts["base"]
	if !ok || cfg.Clusters[base.Cluster] == nil {
		return nil, fmt.Errorf("testenv: %s has no context \"base\"", k.AdminKubeconfig)
	}
	k.URL = cfg.Clusters[base.Cluster].Server
	return k, nil
}

// wait polls cond every 200ms until it returns nil; it fails early if kcp exits. The error names what
// was awaited and cond's last complaint.
func (k *KCP) wait(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) error) error {
	last := errors.New("not checked yet")
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p := k.env.procByName("kcp"); p != nil && !alive(p.pid) {
			return false, k.env.failure("kcp", errors.New("exited"))
		}
		last = cond(ctx)
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && wait.Interrupted(err) {
		return k.env.failure("kcp", fmt.Errorf("%s: not done after %s: %w", what, timeout, last))
	}
	if wait.Interrupted(err) {
		return fmt.Errorf("testenv: %s: %w (last: %w)", what, ctx.Err(), last)
	}
	return err
}

// logf writes a progress line to Options.Log (nowhere for an environment from Load).
func (k *KCP) logf(format string, args ...any) {
	if k.env.opts.Log != nil {
		fmt.Fprintf(k.env.opts.Log, format+"\n", args...)
	}
}

// adminConfig returns kcp's admin kubeconfig reduced to context "root", with credentials inlined.
func (k *KCP) adminConfig() (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.LoadFromFile(k.AdminKubeconfig)
	if err != nil {
		return nil, err
	}
	if _, ok := cfg.Contexts["root"]; !ok {
		return nil, fmt.Errorf("testenv: %s has no context \"root\"", k.AdminKubeconfig)
	}
	cfg.CurrentContext = "root"
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("testenv: %s: %w", k.AdminKubeconfig, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("testenv: %s: %w", k.AdminKubeconfig, err)
	}
	return cfg, nil
}

// RESTConfig returns an admin client config for the logical cluster at path (e.g. "root:mailbox").
func (k *KCP) RESTConfig(path string) (*rest.Config, error) {
	cfg, err := k.adminConfig()
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	rc.Host = k.URL + "/clusters/" + path
	return rc, nil
}

// WriteKubeconfig writes to file an admin kubeconfig whose server is the logical cluster at path, with
// cluster, user and context all named after the path's last segment. The admin token changes at every
// start of kcp: RestartKCPAfter writes the file again.
func (k *KCP) WriteKubeconfig(file, path string) error {
	if k.kubeconfigs == nil {
		k.kubeconfigs = map[string]string{}
	}
	k.kubeconfigs[file] = path
	admin, err := k.adminConfig()
	if err != nil {
		return err
	}
	ctx := admin.Contexts[admin.CurrentContext]
	cluster := *admin.Clusters[ctx.Cluster]
	cluster.Server = k.URL + "/clusters/" + path
	cluster.LocationOfOrigin = ""
	user := *admin.AuthInfos[ctx.AuthInfo]
	user.LocationOfOrigin = ""
	name := path[strings.LastIndexByte(path, ':')+1:]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &cluster
	cfg.AuthInfos[name] = &user
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, file)
}

// CreateWorkspace creates workspace name under root (an existing one is kept), waits until it is
// Ready and writes its admin kubeconfig to Dir/kcp-<name>.kubeconfig.
func (k *KCP) CreateWorkspace(ctx context.Context, name string) (*Workspace, error) {
	start := time.Now()
	cfg, err := k.RESTConfig("root")
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{},
	}}
	if _, err := dyn.Resource(workspacesGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("testenv: creating workspace root:%s: %w", name, err)
	}
	ws := &Workspace{Name: name, Path: "root:" + name, Kubeconfig: filepath.Join(k.env.Dir, "kcp-"+name+".kubeconfig")}
	ws.URL = k.URL + "/clusters/" + ws.Path
	err = k.wait(ctx, "workspace "+ws.Path+" Ready", time.Minute, func(ctx context.Context) error {
		got, err := dyn.Resource(workspacesGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		if phase != "Ready" {
			return fmt.Errorf("phase %q", phase)
		}
		ws.Cluster, _, _ = unstructured.NestedString(got.Object, "spec", "cluster")
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := k.WriteKubeconfig(ws.Kubeconfig, ws.Path); err != nil {
		return nil, fmt.Errorf("testenv: kubeconfig of %s: %w", ws.Path, err)
	}
	k.logf("testenv: kcp workspace %s Ready in %.1fs (kubeconfig %s)", ws.Path, time.Since(start).Seconds(), ws.Kubeconfig)
	return ws, nil
}
