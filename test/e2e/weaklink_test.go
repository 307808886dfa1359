package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubestellar/syncer/test/support"
)

// TestStreamedListWithoutItsEnd: behind a proxy that drops the bookmark ending a streamed list
// (k8s.io/initial-events-end), as some proxies and aggregated APIs do, the syncer's informers do not
// wait for it for ever: each stalled stream ends, is listed instead (said in the log), and the
// syncer syncs. The proxy is the syncer's: the test runs against the kube upstream only.
func TestStreamedListWithoutItsEnd(t *testing.T) {
	if upstreamIsKCP() {
		support.SkipBecause(t, "a client-side behaviour, shown through a proxy in front of the kube upstream")
	}
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("app")
	f.create(f.up, gvrConfigMaps, configMap(ns, "settings", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	px, dropped := bookmarkDroppingProxy(t)
	p := f.startSyncer(f.ownConfigs(), withArgs("--upstream-kubeconfig="+px))
	f.waitForWithin(2*time.Minute, f.down, gvrConfigMaps, ns, "settings", hasMark)
	if dropped.Load() == 0 {
		t.Error("the proxy dropped no initial-events-end bookmark: the syncer streamed no list through it")
	}
	if !strings.Contains(p.logText(), "A streamed list did not end; listing instead") {
		t.Error("the syncer did not say it listed instead of a stalled streamed list")
	}
}

// bookmarkDroppingProxy is an HTTP proxy to the upstream, authenticating as the test's client, that
// drops from watch streams the events that carry k8s.io/initial-events-end; it returns a kubeconfig
// pointing at it and the count of dropped events.
func bookmarkDroppingProxy(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", upstream.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	dropped := &atomic.Int64{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.URL.Query().Get("sendInitialEvents") != "true" {
				return nil
			}
			in := resp.Body
			r, w := io.Pipe()
			go func() {
				defer in.Close()
				br := bufio.NewReader(in)
				for {
					line, err := br.ReadBytes('\n')
					if bytes.Contains(line, []byte("k8s.io/initial-events-end")) {
						dropped.Add(1)
					} else if len(line) > 0 {
						if _, werr := w.Write(line); werr != nil {
							return
						}
					}
					if err != nil {
						_ = w.CloseWithError(err)
						return
					}
				}
			}()
			resp.Body = r
			resp.Header.Del("Content-Length")
			return nil
		},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "http://" + l.Addr().String()}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path, dropped
}
