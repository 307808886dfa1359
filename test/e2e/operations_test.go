package e2e

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubestellar/syncer/test/testenv"
)

// conditionOf returns a condition of a SyncerConfig's status.
func conditionOf(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if m["type"] == typ {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
		}
	}
	return status, reason, message
}

// TestHeartbeatConditionsAndEvents: the syncer writes its heartbeat and conditions on the
// SyncerConfig: an unknown resource, 120 conflicts with unowned edge objects (counted, a few named,
// the message bounded), Ready false; Events on the upstream objects in conflict; everything turns
// true once fixed. objects_managed and sync latency are exposed.
func TestHeartbeatConditionsAndEvents(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", ns, nil)) // the edge's own namespace
	const conflicts = 120
	for i := 0; i < conflicts; i++ {
		name := fmt.Sprintf("c%03d", i)
		f.create(f.up, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"from": "upstream"}))
		f.create(f.down, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"from": "edge"}))
	}
	f.create(f.up, gvrConfigMaps, configMap(ns, "free", map[string]interface{}{"from": "upstream"}))
	spec := nsScope([]string{ns}, resource("", "v1", "configmaps"), resource("", "v1", "nosuchthings"))
	f.syncerConfig(f.name, spec)
	p := f.startSyncer(withArgs("--heartbeat-period=1s", "--heartbeat-refresh-period=2s", "--conflict-recheck-period=2s"))
	f.waitFor(f.down, gvrConfigMaps, ns, "free", hasMark)

	cfg := f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		st, _, msg := conditionOf(o, "ObjectsSynced")
		return st == "False" && strings.Contains(msg, fmt.Sprintf("%d conflicts", conflicts)), fmt.Sprintf("ObjectsSynced %s %q", st, msg)
	})
	if st, reason, _ := conditionOf(cfg, "Ready"); st != "False" || reason == "" {
		t.Errorf("Ready = %s (%s), want False with a reason", st, reason)
	}
	if st, _, msg := conditionOf(cfg, "SelectionValid"); st != "False" || !strings.Contains(msg, "nosuchthings") {
		t.Errorf("SelectionValid = %s %q, want False naming nosuchthings", st, msg)
	}
	_, _, msg := conditionOf(cfg, "ObjectsSynced")
	if len(msg) > 1024 || !strings.Contains(msg, "c000") || !strings.Contains(msg, "more") {
		t.Errorf("ObjectsSynced message (%d characters) is not a bounded summary: %q", len(msg), msg)
	}
	for _, typ := range []string{"UpstreamReachable", "DownstreamReachable"} {
		if st, _, _ := conditionOf(cfg, typ); st != "True" {
			t.Errorf("%s = %q", typ, st)
		}
	}
	beat1, _, _ := unstructured.NestedString(cfg.Object, "status", "lastSyncerHeartbeatTime")
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		beat2, _, _ := unstructured.NestedString(o.Object, "status", "lastSyncerHeartbeatTime")
		return beat1 != "" && beat2 > beat1, fmt.Sprintf("heartbeat %q then %q", beat1, beat2)
	})

	// An Event on the upstream object says why it is not at the edge.
	eventually(t, 30*time.Second, "a Conflict event upstream", func() (bool, string) {
		events, err := f.up.kube.CoreV1().Events(ns).List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=c000"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == "Conflict" && e.Type == "Warning" && e.InvolvedObject.Kind == "ConfigMap" && e.Source.Component == "kubestellar-syncer" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none a Conflict", len(events.Items))
	})

	m := p.metrics()
	if n := m[`kubestellar_syncer_objects_managed{direction="downsync",resource="configmaps"}`]; n != 1 {
		t.Errorf("objects_managed for configmaps = %v, want 1 (only the free one is ours)", n)
	}
	if n := m[`kubestellar_syncer_informers_synced{side="upstream"}`]; n < 2 {
		t.Errorf("informers_synced upstream = %v", n)
	}

	// Fixed: the unowned objects go, the unknown resource leaves the config.
	for i := 0; i < conflicts; i++ {
		f.delete(f.down, gvrConfigMaps, ns, fmt.Sprintf("c%03d", i))
	}
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	f.waitFor(f.up, gvrSyncerConfig, "", f.name, func(o *unstructured.Unstructured) (bool, string) {
		st, reason, msg := conditionOf(o, "Ready")
		return st == "True", fmt.Sprintf("Ready %s %s %q", st, reason, msg)
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "c119", dataEquals("from", "upstream"))
	m = p.metrics()
	if n := m[`kubestellar_syncer_objects_managed{direction="downsync",resource="configmaps"}`]; n != conflicts+1 {
		t.Errorf("objects_managed for configmaps = %v, want %d", n, conflicts+1)
	}
	if !strings.Contains(scrape(t, p), `kubestellar_syncer_sync_latency_seconds_count{direction="downsync",resource="configmaps"}`) {
		t.Error("no sync latency histogram for configmaps")
	}
}

func scrape(t *testing.T, p *syncerProc) string {
	t.Helper()
	resp, err := httpGet("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// proxy forwards TCP connections to a target until stopped; stopping closes every connection, as a
// network partition would. Frozen, it keeps every client connection open and answers nothing — what a
// hung apiserver looks like from outside — and thawed it drops those connections (as the apiserver's
// restart would) and forwards again.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn // both ends of forwarded connections
	frozen bool
	held   []net.Conn // client connections left silent while frozen
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, addr: freeAddr(t), target: target}
	p.start()
	t.Cleanup(func() { p.thaw(); p.stop() })
	return p
}

func (p *proxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.frozen {
				p.held = append(p.held, c)
				p.mu.Unlock()
				continue
			}
			p.mu.Unlock()
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() {
				_, _ = io.Copy(c, u)
				p.mu.Lock()
				defer p.mu.Unlock()
				if p.frozen {
					p.held = append(p.held, c) // the server went silent: the client hears nothing
					return
				}
				c.Close()
			}()
		}
	}()
}

// freeze makes the target hang: forwarded connections stop (their client ends stay open and silent).
func (p *proxy) freeze() {
	p.mu.Lock()
	p.frozen = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for i := 1; i < len(conns); i += 2 {
		conns[i].Close() // the target's end
	}
}

// thaw drops the silent connections and forwards again.
func (p *proxy) thaw() {
	p.mu.Lock()
	p.frozen = false
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, c := range held {
		c.Close()
	}
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// kubeconfigVia writes a copy of a kubeconfig with another server address and, if token is set,
// bearer-token authentication instead of the client certificate.
func kubeconfigVia(t *testing.T, s *testenv.Server, server, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	if token != "" {
		for name := range cfg.AuthInfos {
			cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHealthProbesAndDisconnect: /readyz is 503 until synced, 200 then, 503 naming the upstream
// while it is unreachable (a partition made by a proxy), and 200 again once it is back, when syncing
// resumes; /healthz stays 200 throughout.
func TestHealthProbesAndDisconnect(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "before", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	u, err := url.Parse(upstream.URL) // a kcp workspace's URL has a path: /clusters/<workspace>
	if err != nil {
		t.Fatal(err)
	}
	px := startProxy(t, u.Host)
	p := f.startSyncer(withArgs("--upstream-kubeconfig=" + kubeconfigVia(t, upstream, "https://"+px.addr+u.Path, "")))
	eventually(t, 30*time.Second, "ready", func() (bool, string) {
		code, body := p.probe("/readyz")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "before", hasMark)

	px.stop()
	eventually(t, 30*time.Second, "not ready while the upstream is unreachable", func() (bool, string) {
		code, body := p.probe("/readyz")
		return code == 503 && strings.Contains(body, "upstream unreachable"), fmt.Sprintf("%d %s", code, body)
	})
	if code, body := p.probe("/healthz"); code != 200 {
		t.Errorf("/healthz = %d %s while disconnected, want 200 (a restart does not help)", code, body)
	}
	if v := p.metrics()[`kubestellar_syncer_reachable{side="upstream"}`]; v != 0 {
		t.Errorf("reachable{upstream} = %v while disconnected", v)
	}
	f.create(f.up, gvrConfigMaps, configMap(ns, "during", map[string]interface{}{"k": "v"}))

	px.start()
	eventually(t, 60*time.Second, "ready again", func() (bool, string) {
		code, body := p.probe("/readyz")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	f.waitFor(f.down, gvrConfigMaps, ns, "during", hasMark)
}

// TestLeaderElection: two syncers for one sync target; one leads and syncs, the other stands by
// (ready, sending nothing but Lease requests); when the leader is killed, the other takes over and
// keeps syncing.
func TestLeaderElection(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	leaseNS := f.name + "-lease"
	f.create(f.down, gvrNamespaces, obj("v1", "Namespace", "", leaseNS, nil))
	t.Cleanup(func() { f.delete(f.down, gvrNamespaces, "", leaseNS) })
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	args := withArgs("--leader-elect", "--leader-elect-resource-namespace="+leaseNS, "--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	procs := []*syncerProc{f.startSyncer(args), f.startSyncer(args)}
	var leader, standby *syncerProc
	eventually(t, 30*time.Second, "one leader", func() (bool, string) {
		var l []*syncerProc
		for _, p := range procs {
			if code, _ := p.probe("/healthz"); code != 200 {
				return false, "not serving yet"
			}
			if p.metrics()["kubestellar_syncer_leader{}"] == 1 {
				l = append(l, p)
			}
		}
		if len(l) != 1 {
			return false, fmt.Sprintf("%d leaders", len(l))
		}
		leader = l[0]
		standby = procs[0]
		if standby == leader {
			standby = procs[1]
		}
		return true, ""
	})
	f.create(f.up, gvrConfigMaps, configMap(ns, "first", map[string]interface{}{"k": "v1"}))
	f.waitFor(f.down, gvrConfigMaps, ns, "first", hasMark)
	if code, body := standby.probe("/readyz"); code != 200 || !strings.Contains(body, "standby") {
		t.Errorf("standby /readyz = %d %q", code, body)
	}
	for k, v := range standby.metrics() {
		if strings.HasPrefix(k, "kubestellar_syncer_api_requests_total") && v > 0 && !strings.Contains(k, `verb="GET"`) &&
			!strings.Contains(k, `verb="UPDATE"`) && !strings.Contains(k, `verb="CREATE"`) {
			t.Errorf("the standby sent %v %s (only Lease GET/CREATE/UPDATE expected)", v, k)
		}
		if strings.HasPrefix(k, "kubestellar_syncer_writes_total") && v > 0 {
			t.Errorf("the standby wrote: %s = %v", k, v)
		}
	}

	_ = leader.cmd.Process.Kill() // no chance to release the Lease
	<-leader.done
	eventually(t, 30*time.Second, "the standby takes over", func() (bool, string) {
		return standby.metrics()["kubestellar_syncer_leader{}"] == 1, "not leading yet"
	})
	f.create(f.up, gvrConfigMaps, configMap(ns, "second", map[string]interface{}{"k": "v1"}))
	f.update(f.up, gvrConfigMaps, ns, "first", func(o *unstructured.Unstructured) { o.Object["data"] = map[string]interface{}{"k": "v2"} })
	f.waitFor(f.down, gvrConfigMaps, ns, "second", hasMark)
	f.waitFor(f.down, gvrConfigMaps, ns, "first", dataEquals("k", "v2"))
}

// TestNoSecretsInLogs: with a bearer-token kubeconfig and request logging on (-v=6, and -v=9 which
// also logs headers and bodies), the token never appears in the log.
func TestNoSecretsInLogs(t *testing.T) {
	f := newFixture(t)
	ns := f.namespace("ns")
	f.create(f.up, gvrConfigMaps, configMap(ns, "c", map[string]interface{}{"k": "v"}))
	f.syncerConfig(f.name, nsScope([]string{ns}, resource("", "v1", "configmaps")))
	kc := kubeconfigVia(t, upstream, upstream.URL, upstream.BearerToken)
	for _, v := range []string{"6", "9"} {
		p := f.startSyncer(withArgs("--upstream-kubeconfig="+kc, "-v="+v))
		f.waitFor(f.down, gvrConfigMaps, ns, "c", hasMark)
		// Everything the start-up sends (lists, watches, the apply, the status) is in the log.
		p.waitSettled()
		eventually(t, 10*time.Second, "-v="+v+": requests in the log (or this test proves nothing)", func() (bool, string) {
			return strings.Contains(p.logText(), `verb="GET" url="`+upstream.URL), "no upstream GET logged"
		})
		p.stop()
		log := p.logText()
		if strings.Contains(log, upstream.BearerToken) {
			t.Errorf("-v=%s: the bearer token is in the log", v)
		}
		f.delete(f.down, gvrConfigMaps, ns, "c")
		f.waitGone(f.down, gvrConfigMaps, ns, "c")
	}
}
