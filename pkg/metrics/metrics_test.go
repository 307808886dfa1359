package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubestellar/syncer/pkg/version"
)

func TestVerb(t *testing.T) {
	for _, tc := range []struct{ method, path, watch, want string }{
		{"GET", "/api/v1/namespaces/a/configmaps", "", "LIST"},
		{"GET", "/api/v1/namespaces/a/configmaps/c", "", "GET"},
		{"GET", "/api/v1/namespaces/a/configmaps", "true", "WATCH"},
		{"GET", "/api/v1/namespaces", "", "LIST"},
		{"GET", "/api/v1/namespaces/a", "", "GET"},
		{"GET", "/apis/apps/v1/deployments", "", "LIST"},
		{"GET", "/apis/apps/v1/namespaces/a/deployments/web/status", "", "GET"},
		{"GET", "/clusters/root:ws/apis/apps/v1/deployments", "", "LIST"},
		{"GET", "/api", "", "DISCOVERY"},
		{"GET", "/apis", "", "DISCOVERY"},
		{"GET", "/apis/apps/v1", "", "DISCOVERY"},
		{"GET", "/api/v1/watch/configmaps", "", "WATCH"},
		{"POST", "/api/v1/namespaces/a/configmaps", "", "CREATE"},
		{"PUT", "/api/v1/namespaces/a/configmaps/c", "", "UPDATE"},
		{"PATCH", "/api/v1/namespaces/a/configmaps/c", "", "PATCH"},
		{"DELETE", "/api/v1/namespaces/a/configmaps/c", "", "DELETE"},
	} {
		if got := Verb(tc.method, tc.path, tc.watch); got != tc.want {
			t.Errorf("Verb(%s %s watch=%s) = %s, want %s", tc.method, tc.path, tc.watch, got, tc.want)
		}
	}
}

func TestInstrumentTransportCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: m.InstrumentTransport("downstream", http.DefaultTransport)}
	for _, p := range []string{"/api/v1/namespaces/a/configmaps", "/api/v1/namespaces/a/configmaps/missing"} {
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := testutil.ToFloat64(m.APIRequests.WithLabelValues("downstream", "LIST", "200")); got != 1 {
		t.Errorf("LIST 200 = %v", got)
	}
	if got := testutil.ToFloat64(m.APIRequests.WithLabelValues("downstream", "GET", "404")); got != 1 {
		t.Errorf("GET 404 = %v", got)
	}
}

func TestWorkqueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "downsync", MetricsProvider: m.WorkqueueProvider()})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	if got := testutil.ToFloat64(m.queue.depth.WithLabelValues("downsync")); got != 2 {
		t.Errorf("depth = %v, want 2", got)
	}
	item, _ := q.Get()
	q.Done(item)
	q.AddRateLimited("c")
	if got := testutil.ToFloat64(m.queue.adds.WithLabelValues("downsync")); got != 2 {
		t.Errorf("adds = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.queue.retries.WithLabelValues("downsync")); got != 1 {
		t.Errorf("retries = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Errorf("gather: %d %v", n, err)
	}
}

func TestReachabilityFromTransport(t *testing.T) {
	m := New(prometheus.NewRegistry())
	if ok, _, _ := m.Reachability("upstream"); !ok {
		t.Error("a side is reachable until a request fails")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	url := srv.URL
	client := &http.Client{Transport: m.InstrumentTransport("upstream", http.DefaultTransport)}
	if resp, err := client.Get(url + "/api"); err == nil {
		resp.Body.Close()
	}
	if got := testutil.ToFloat64(m.Reachable.WithLabelValues("upstream")); got != 1 {
		t.Errorf("reachable = %v after a response", got)
	}
	srv.Close()
	if resp, err := client.Get(url + "/api"); err == nil {
		resp.Body.Close()
		t.Fatal("request to a closed server succeeded")
	}
	ok, lastErr, since := m.Reachability("upstream")
	if ok || lastErr == "" || since.IsZero() {
		t.Errorf("after a transport error: ok=%v lastErr=%q since=%v", ok, lastErr, since)
	}
	if got := testutil.ToFloat64(m.Reachable.WithLabelValues("upstream")); got != 0 {
		t.Errorf("reachable = %v after a transport error", got)
	}
	if got := testutil.ToFloat64(m.APIRequests.WithLabelValues("upstream", "DISCOVERY", "error")); got != 1 {
		t.Errorf("error requests counted %v", got)
	}
}

func TestObjectsManagedCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.SetObjectCounter(func(add func(direction, resource string, n int)) {
		add(Downsync, "configmaps", 3)
		add(Upsync, "policyreports.wgpolicyk8s.io", 1)
	})
	want := `
# HELP kubestellar_syncer_objects_managed Objects the syncer manages, by direction (downsync: owned edge objects; upsync: upstream copies) and resource.
# TYPE kubestellar_syncer_objects_managed gauge
kubestellar_syncer_objects_managed{direction="downsync",resource="configmaps"} 3
kubestellar_syncer_objects_managed{direction="upsync",resource="policyreports.wgpolicyk8s.io"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubestellar_syncer_objects_managed"); err != nil {
		t.Error(err)
	}
}

func TestClientGoHooksAndLatency(t *testing.T) {
	m := New(prometheus.NewRegistry())
	hooks := m.ClientGoHooks()
	u, _ := url.Parse("https://127.0.0.1:6443/api/v1/configmaps")
	hooks.RateLimiterLatency.Observe(context.Background(), "GET", *u, 250*time.Millisecond)
	hooks.RequestLatency.Observe(context.Background(), "GET", *u, 10*time.Millisecond)
	if n := testutil.CollectAndCount(m.ClientRateLimiterLatency); n != 1 {
		t.Errorf("rate limiter latency series = %d", n)
	}
	if n := testutil.CollectAndCount(m.ClientRequestLatency); n != 1 {
		t.Errorf("request latency series = %d", n)
	}
	m.SyncLatency.WithLabelValues(Downsync, "configmaps").Observe(0.02)
	if n := testutil.CollectAndCount(m.SyncLatency); n != 1 {
		t.Errorf("sync latency series = %d", n)
	}
	m.Leader.Set(1)
	m.LastHeartbeat.SetToCurrentTime()
	if testutil.ToFloat64(m.Leader) != 1 || testutil.ToFloat64(m.LastHeartbeat) < 1e9 {
		t.Error("leader / heartbeat gauges")
	}
}

// TestHungSideIsUnreachable: a request that has waited longer than HungAfter makes its side
// unreachable (in Reachability and in the gauge at scrape time) though no error came back; when it
// ends the side is reachable again and the hook hears of both changes.
func TestHungSideIsUnreachable(t *testing.T) {
	m := New(prometheus.NewRegistry())
	var changes []bool
	m.SetReachabilityHook(func(side string, ok bool) { changes = append(changes, ok) })
	m.observeReachability("upstream", nil)
	req, _ := http.NewRequest(http.MethodPatch, "https://up/apis/x/v1/things/a", nil)
	m.track("upstream", req, true)
	m.inflight["upstream"][req] = time.Now().Add(-HungAfter - time.Second) // waited 11 s
	ok, msg, _ := m.Reachability("upstream")
	if ok || !strings.Contains(msg, "no response for") || !strings.Contains(msg, "PATCH /apis/x/v1/things/a") {
		t.Fatalf("hung: ok=%v %q", ok, msg)
	}
	if got := gatheredReachable(t, m); got != 0 {
		t.Errorf("reachable gauge %v while hung", got)
	}
	m.track("upstream", req, false)
	m.observeReachability("upstream", errors.New("context deadline exceeded"))
	m.observeReachability("upstream", nil)
	if ok, _, _ := m.Reachability("upstream"); !ok || gatheredReachable(t, m) != 1 {
		t.Error("not reachable again after a response")
	}
	if fmt.Sprint(changes) != "[false true]" {
		t.Errorf("hook heard %v, want [false true]", changes)
	}
}

func gatheredReachable(t *testing.T, m *Metrics) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(reachableCollector{m})
	n, err := testutil.GatherAndCount(reg, "kubestellar_syncer_reachable")
	if err != nil || n != 1 {
		t.Fatalf("gathered %d series: %v", n, err)
	}
	return testutil.ToFloat64(m.Reachable.WithLabelValues("upstream"))
}

// TestBuildInfo: New registers kubestellar_syncer_build_info, 1, labelled with this binary's version,
// revision and Go version; the labels are exactly the build's.
func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	New(reg)
	v := version.Get()
	want := fmt.Sprintf(`
# HELP kubestellar_syncer_build_info Always 1; the labels are the syncer's version, git revision and Go version.
# TYPE kubestellar_syncer_build_info gauge
kubestellar_syncer_build_info{goversion=%q,revision=%q,version=%q} 1
`, v.GoVersion, v.Revision, v.Version)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubestellar_syncer_build_info"); err != nil {
		t.Error(err)
	}

	reg = prometheus.NewRegistry()
	reg.MustRegister(buildInfo(version.Info{Version: "v1.2.3-4-gabcdef0-dirty", Revision: "abcdef0123456789", GoVersion: "go1.26.0", Platform: "linux/amd64"}))
	want = `
# HELP kubestellar_syncer_build_info Always 1; the labels are the syncer's version, git revision and Go version.
# TYPE kubestellar_syncer_build_info gauge
kubestellar_syncer_build_info{goversion="go1.26.0",revision="abcdef0123456789",version="v1.2.3-4-gabcdef0-dirty"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
