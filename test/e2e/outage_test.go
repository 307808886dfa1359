package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/test/testenv"
)

// An outage as users meet it: one side's apiserver hangs (SIGSTOP: connections accepted, nothing
// answered), is then killed, stays down a while (connections refused) and starts again with an empty
// watch cache, while writers keep changing objects on both sides during the outage and after it. The
// syncer retries what failed as soon as the side answers again, while its informers still re-list:
// the decisions it takes meanwhile must be looked at again once the caches are complete. At the end
// both sides must agree exactly: nothing missing, nothing extra, nothing stale, in the downsynced
// namespaces and in the upsynced one, and an edge object the syncer does not own untouched.

const (
	outageHang = 15 * time.Second // long enough for readiness to say so (a request waits 10 s)
	outageDown = 5 * time.Second
	outageTail = 15 * time.Second // the writers go on after the side is back
	// outageSlowLists is how long the restarted side's lists wait for its watch cache to fill.
	outageSlowLists = 8 * time.Second
	// auditPeriod is the syncer's --audit-period in these tests: short, so that a missed deletion the
	// audit would find (and repair) shows in its metric before the test ends.
	auditPeriod = 2 * time.Second
)

type outageScenario struct {
	f         *fixture
	side      string // the side that fails: "upstream" or "downstream"
	px        *listProxy
	down      []string // the downsynced namespaces
	up        string   // the edge namespace whose ConfigMaps are upsynced
	untouched func()
	p         *syncerProc
	writers   []*writer
	// upClients are the upstream writer's clients: made anew when a restart of kcp changes its token.
	upClients atomic.Pointer[clients]
}

// newOutageScenario selects the ConfigMaps of ten namespaces for downsync and those of one edge
// namespace for upsync, starts the syncer and waits for both sides to agree.
func newOutageScenario(t *testing.T, side string) *outageScenario {
	f := newFixture(t)
	o := &outageScenario{f: f, side: side}
	for i := 0; i < 10; i++ {
		ns := f.namespace(fmt.Sprintf("d%02d", i))
		o.down = append(o.down, ns)
		for j := 0; j < 5; j++ {
			f.create(f.up, gvrConfigMaps, configMap(ns, fmt.Sprintf("w-%03d", j), map[string]interface{}{"v": "seed"}))
		}
	}
	o.untouched = f.unownedAtEdge(o.down[0], "unowned")
	o.up = f.name + "-up"
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", o.up, nil))
	t.Cleanup(func() {
		for _, side := range []clients{f.up, f.down} {
			_ = side.dyn.Resource(gvrNamespaces).Delete(context.Background(), o.up, metav1.DeleteOptions{})
		}
	})
	for j := 0; j < 5; j++ {
		f.create(f.down, gvrConfigMaps, configMap(o.up, fmt.Sprintf("w-%03d", j), map[string]interface{}{"v": "seed"}))
	}
	spec := nsScope(o.down, resource("", "v1", "configmaps"))
	spec["upsync"] = []interface{}{map[string]interface{}{
		"apiGroup": "", "resources": []interface{}{"configmaps"}, "namespaces": []interface{}{o.up}, "names": []interface{}{"*"},
	}}
	f.syncerConfig(f.name, spec)
	// The syncer reaches the side that fails through a proxy that can make its lists slow.
	flag, server := "--downstream-kubeconfig=", env.Downstream
	if side == "upstream" {
		flag, server = "--upstream-kubeconfig=", upstream
	}
	o.px = startListProxy(t, server)
	o.p = f.startSyncer(withArgs(flag+o.px.kubeconfig(t, server), "--audit-period="+auditPeriod.String()), highChurn)
	o.waitConverged(60 * time.Second)
	return o
}

// startWriters changes ConfigMaps upstream in the downsynced namespaces (20 a second) and at the edge
// in the upsynced one (5 a second), with names drawn from a small set so that objects come and go.
func (o *outageScenario) startWriters() {
	seed := time.Now().UnixNano()
	o.f.t.Logf("writers seeded with %d", seed)
	up := o.f.up // a copy: run replaces o.f.up after a kcp restart while the writers read theirs
	o.upClients.Store(&up)
	down := o.f.down
	o.writers = append(o.writers,
		startWriter(o.f, func() clients { return *o.upClients.Load() }, o.down, 12, 50*time.Millisecond, 100000, seed),
		startWriter(o.f, func() clients { return down }, []string{o.up}, 12, 200*time.Millisecond, 100000, seed+1))
	o.f.t.Cleanup(func() { o.haltWriters() })
}

func (o *outageScenario) haltWriters() (changes, errors int) {
	for _, w := range o.writers {
		c, e := w.halt()
		changes, errors = changes+c, errors+e
	}
	return changes, errors
}

// audit is what differs between the sides: downsynced copies missing, extra or stale (by namespace),
// and upsynced copies the same.
func (o *outageScenario) audit() []string {
	var out []string
	for _, ns := range o.down {
		missing, extra, stale := o.f.audit(ns, "unowned")
		if len(missing)+len(extra)+len(stale) > 0 {
			out = append(out, fmt.Sprintf("%s: missing %v, extra %v, stale %v", ns, missing, extra, stale))
		}
	}
	missing, extra, stale := o.f.auditUpsync(o.up)
	if len(missing)+len(extra)+len(stale) > 0 {
		out = append(out, fmt.Sprintf("upsynced %s: missing %v, extra %v, stale %v", o.up, missing, extra, stale))
	}
	return out
}

func (o *outageScenario) waitConverged(timeout time.Duration) {
	o.f.t.Helper()
	eventually(o.f.t, timeout, "both sides to agree", func() (bool, string) {
		diff := o.audit()
		return len(diff) == 0, strings.Join(diff, "; ")
	})
}

// auditUpsync compares the ConfigMaps of an upsynced namespace: every edge one (the apiserver's own
// kube-root-ca.crt aside) must have an upstream copy with the upsync mark and the same data; every
// upstream copy with the mark must have its edge object.
func (f *fixture) auditUpsync(ns string) (missing, extra, stale []string) {
	edge, up := f.configMaps(f.down, ns), f.configMaps(f.up, ns)
	delete(edge, "kube-root-ca.crt")
	delete(up, "kube-root-ca.crt")
	for name, d := range edge {
		u := up[name]
		switch {
		case u == nil || !mapping.OwnedUpstream(u):
			missing = append(missing, name)
		case fmt.Sprint(u.Object["data"]) != fmt.Sprint(d.Object["data"]):
			stale = append(stale, name)
		}
	}
	for name, u := range up {
		if mapping.OwnedUpstream(u) && edge[name] == nil {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(stale)
	return missing, extra, stale
}

// run takes the side down as an outage does while the writers go on, brings it back, lets the writers
// go on a while longer, and checks that both sides then agree and that readiness told the truth.
func (o *outageScenario) run() {
	t, side := o.f.t, o.side
	o.startWriters()
	time.Sleep(2 * time.Second) // fault injection, not a wait: the outage starts under a running writer
	hungAt := time.Now()
	back, err := hang(side)
	if err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = back(context.Background(), 0)
		}
	})
	eventually(t, 2*outageHang, "/readyz to say the "+side+" does not answer", func() (bool, string) {
		code, body := o.p.probe("/readyz")
		return code == 503 && strings.Contains(body, side), fmt.Sprintf("%d %s", code, body)
	})
	t.Logf("not ready %.1fs after the %s hung", time.Since(hungAt).Seconds(), side)
	time.Sleep(time.Until(hungAt.Add(outageHang))) // the hang lasts outageHang
	restarted = true
	o.px.holdLists(time.Hour) // until it is back: its watch cache is empty then
	if err := back(o.f.ctx, outageDown); err != nil {
		t.Fatal(err)
	}
	if side == "upstream" && upstreamIsKCP() {
		// kcp's admin token changed with its restart: the test's clients and the proxy's take the new one.
		refreshUpstream(t)
		o.f.up = mustClients(upstream)
		up := o.f.up
		o.upClients.Store(&up)
		o.px.reload(t, upstream)
	}
	o.px.holdLists(outageSlowLists)
	t.Logf("the %s is back %.1fs after it hung; its lists take %s more", side, time.Since(hungAt).Seconds(), outageSlowLists)
	time.Sleep(outageTail) // the writers go on after the outage
	changes, errs := o.haltWriters()
	o.waitConverged(90 * time.Second)
	eventually(t, 60*time.Second, "ready again", func() (bool, string) {
		code, body := o.p.probe("/readyz")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	o.untouched()
	if o.p.exited() {
		t.Fatal("the syncer exited")
	}
	o.p.expectNoOrphans()
	t.Logf("%d changes on both sides (%d refused or timed out during the outage); both sides agree", changes, errs)
}

// hang freezes a side's apiserver (kcp, for a kcp upstream) and returns how to bring it back: killed,
// left down for a while, started again.
func hang(side string) (back func(ctx context.Context, down time.Duration) error, err error) {
	if side == "upstream" && upstreamIsKCP() {
		if err := env.Signal("kcp", syscall.SIGSTOP); err != nil {
			return nil, err
		}
		return func(ctx context.Context, down time.Duration) error { return env.RestartKCPAfter(ctx, down) }, nil
	}
	s := env.Downstream
	if side == "upstream" {
		s = env.Upstream
	}
	if err := env.Signal(testenv.APIServerProcess(s), syscall.SIGSTOP); err != nil {
		return nil, err
	}
	return func(ctx context.Context, down time.Duration) error { return env.RestartAPIServerAfter(ctx, s, down) }, nil
}

// TestFaultEdgeOutageUnderWriters: the edge's apiserver hangs, is killed and comes back, under
// writers on both sides. Once it is back, every deletion made upstream meanwhile and after reaches
// the edge (a create retried while the edge's informers re-list, then deleted upstream, must not stay
// behind), and both sides agree.
func TestFaultEdgeOutageUnderWriters(t *testing.T) {
	newOutageScenario(t, "downstream").run()
}

// TestFaultUpstreamOutageUnderWriters: the same with the upstream (the kube-apiserver, or kcp).
func TestFaultUpstreamOutageUnderWriters(t *testing.T) {
	newOutageScenario(t, "upstream").run()
}

// listProxy is an HTTP proxy in front of an apiserver, serving TLS with the environment's
// certificate and authenticating to the apiserver as its admin. Asked to (holdLists), it holds back
// for a while the requests that read a whole collection — lists, and watches that begin with the
// current state (watch-list) — and forwards everything else at once: an apiserver just restarted takes
// writes and reads by name at once, but serves lists only once its watch cache is filled again
// ("storage is (re)initializing"), seconds later on a busy one. Resumed watches pass.
type listProxy struct {
	addr string
	mu   sync.Mutex
	hold time.Time // lists wait until then
	// epoch is cancelled by down: every request in flight (watches too) is cut, and new ones are
	// refused until up.
	epoch   context.Context
	cut     context.CancelFunc
	refused bool
	// transport authenticates to the apiserver.
	transport atomic.Pointer[http.RoundTripper]
	// hidden is an API group the proxy's discovery does not show (hideGroup): the apiserver serves it,
	// its discovery has not caught up yet.
	hidden atomic.Pointer[string]
}

func startListProxy(t *testing.T, s *testenv.Server) *listProxy {
	t.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := &listProxy{addr: freeAddr(t)}
	p.epoch, p.cut = context.WithCancel(context.Background())
	p.reload(t, s)
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.Host = target.Scheme, target.Host, target.Host
			r.Out.Header.Del("Authorization") // the proxy's own credentials go to the apiserver
			if p.hidden.Load() != nil && isGroupList(r.In) {
				// The plain group list (not aggregated discovery), uncompressed, for hideGroup to filter.
				r.Out.Header.Set("Accept", "application/json")
				r.Out.Header.Del("Accept-Encoding")
			}
		},
		ModifyResponse: p.filterGroups,
		Transport:      p,
		FlushInterval:  -1, // watches stream
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	srv := &http.Server{Addr: p.addr, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			epoch, refused := p.current()
			if refused {
				panic(http.ErrAbortHandler) // the connection breaks: no answer
			}
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			stop := context.AfterFunc(epoch, cancel)
			defer stop()
			r = r.WithContext(ctx)
			if p.hides(r) {
				http.NotFound(w, r)
				return
			}
			for readsCollection(r) && p.holding() {
				select {
				case <-time.After(50 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			rp.ServeHTTP(w, r)
		})}
	cert, key := env.ServingCert()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(ln, cert, key) }()
	t.Cleanup(func() { p.cut(); _ = srv.Close() })
	return p
}

// readsCollection tells whether a request reads a collection's current state: a list (client-go's
// lists page, with a limit) or a watch that starts with it (sendInitialEvents).
func readsCollection(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodGet && (q.Get("sendInitialEvents") == "true" || (q.Get("watch") != "true" && q.Has("limit")))
}

// reload makes the proxy authenticate with s's credentials as they are now.
func (p *listProxy) reload(t *testing.T, s *testenv.Server) {
	t.Helper()
	cfg, err := s.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.transport.Store(&transport)
}

// RoundTrip forwards with the current credentials.
func (p *listProxy) RoundTrip(r *http.Request) (*http.Response, error) {
	return (*p.transport.Load()).RoundTrip(r)
}

func (p *listProxy) current() (context.Context, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch, p.refused
}

// down cuts every request in flight (watches end) and refuses new ones until up: the apiserver is
// unreachable.
func (p *listProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = true
	p.cut()
	p.epoch, p.cut = context.WithCancel(context.Background())
}

// up forwards again.
func (p *listProxy) up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = false
}

func (p *listProxy) holding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.hold)
}

// hideGroup makes the proxy's discovery leave out an API group ("" shows every group again): the
// group list omits it and its group versions are not found, while its resources are served as usual —
// an apiserver whose discovery lags behind a CRD it has Established.
func (p *listProxy) hideGroup(group string) {
	if group == "" {
		p.hidden.Store(nil)
		return
	}
	p.hidden.Store(&group)
}

// isGroupList tells whether a request reads the apiserver's list of API groups.
func isGroupList(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/apis"
}

// hides tells whether a request reads the discovery of the hidden group (/apis/<group> or
// /apis/<group>/<version>).
func (p *listProxy) hides(r *http.Request) bool {
	g := p.hidden.Load()
	if g == nil || r.Method != http.MethodGet {
		return false
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	return len(parts) >= 2 && len(parts) <= 3 && parts[0] == "apis" && parts[1] == *g
}

// filterGroups leaves the hidden group out of a group list.
func (p *listProxy) filterGroups(resp *http.Response) error {
	g := p.hidden.Load()
	if g == nil || !isGroupList(resp.Request) || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	var list metav1.APIGroupList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("the group list is not an APIGroupList: %w", err)
	}
	list.Groups = slices.DeleteFunc(list.Groups, func(group metav1.APIGroup) bool { return group.Name == *g })
	if body, err = json.Marshal(list); err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Set("Content-Type", "application/json")
	return nil
}

// holdLists holds lists back for d from now.
func (p *listProxy) holdLists(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = time.Now().Add(d)
}

// kubeconfig is a kubeconfig for s through the proxy: s's URL path (a kcp workspace's) kept, the
// environment's CA, no credentials of its own (the proxy has them).
func (p *listProxy) kubeconfig(t *testing.T, s *testenv.Server) string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "https://" + p.addr + u.Path, CertificateAuthority: env.Downstream.CAFile()}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFaultDeleteWhileEdgeRelists is the lost deletion made deterministic. The edge is unreachable
// while an object is created upstream; when the edge answers again its lists stay slow (its watch
// cache fills), so the syncer creates the object at the edge while its edge cache, still re-listing,
// does not hold it. The object is then deleted upstream: the syncer finds nothing to delete in that
// cache. When the re-list completes and brings the object, it must be looked at again and deleted,
// not taken for the echo of the syncer's own create.
func TestFaultDeleteWhileEdgeRelists(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "before", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	px := startListProxy(t, env.Downstream)
	p := f.startSyncer(withArgs("--downstream-kubeconfig="+px.kubeconfig(t, env.Downstream), "--audit-period="+auditPeriod.String()))
	f.waitFor(f.down, gvrConfigMaps, ns, "before", hasMark)

	px.down()
	f.create(f.up, gvrConfigMaps, configMap(ns, "during", map[string]interface{}{"k": "v"}))
	eventually(t, 30*time.Second, "the create to fail", func() (bool, string) {
		return strings.Contains(p.logText(), `key="configmaps `+ns+`/during"`) && p.metrics()[`kubestellar_syncer_reachable{side="downstream"}`] == 0,
			"no failed create yet"
	})
	px.holdLists(time.Hour)
	px.up()
	f.waitFor(f.down, gvrConfigMaps, ns, "during", hasMark) // written live; the edge cache does not hold it
	f.update(f.up, gvrConfigMaps, ns, "during", func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"k": "v2"} })
	f.waitFor(f.down, gvrConfigMaps, ns, "during", dataEquals("k", "v2"))
	f.delete(f.up, gvrConfigMaps, ns, "during")
	eventually(t, 30*time.Second, "the deletion processed on the re-listing cache", func() (bool, string) {
		for _, line := range strings.Split(p.logText(), "\n") {
			if strings.Contains(line, "no edge object to delete") && strings.Contains(line, `key="configmaps `+ns+`/during"`) {
				return true, ""
			}
		}
		return false, "not yet"
	})
	px.holdLists(0) // the re-list completes, bringing the object as the syncer last wrote it
	f.waitGone(f.down, gvrConfigMaps, ns, "during")
	if p.exited() {
		t.Fatal("the syncer exited")
	}
	time.Sleep(2 * auditPeriod) // two audits: a leak they found would show in the metric
	p.expectNoOrphans()
}

// expectNoOrphans checks that the syncer's audit found nothing it should have deleted and had not:
// the engine's own events must have done it.
func (p *syncerProc) expectNoOrphans() {
	p.t.Helper()
	for k, v := range p.metrics() {
		if strings.HasPrefix(k, "kubestellar_syncer_orphans_found_total") && v > 0 {
			p.t.Errorf("the audit found a missed deletion (%s = %v): the events did not get there alone", k, v)
		}
	}
}
