package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubestellar/syncer/pkg/reachability"
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

// TestWorkqueueMetrics: client-go's workqueue metrics are recorded under the names Kubernetes
// components give them (workqueue_*{name}), on the registry passed in, with Kubernetes' buckets.
func TestWorkqueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	// The retry waits an hour, so that it is counted as a retry and not yet as an add.
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "downsync", MetricsProvider: m.WorkqueueProvider()})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	want := `
# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="downsync"} 2
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="downsync"} 2
# HELP workqueue_retries_total Total number of retries handled by workqueue
# TYPE workqueue_retries_total counter
workqueue_retries_total{name="downsync"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "workqueue_depth", "workqueue_adds_total", "workqueue_retries_total"); err != nil {
		t.Error(err)
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
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
		if f.GetName() == "workqueue_queue_duration_seconds" {
			var les []float64
			for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
				les = append(les, b.GetUpperBound())
			}
			if want := prometheus.ExponentialBuckets(10e-9, 10, 10); fmt.Sprint(les) != fmt.Sprint(want) {
				t.Errorf("queue duration buckets %v, want Kubernetes' %v", les, want)
			}
		}
	}
	for _, name := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
		"workqueue_retries_total", "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"} {
		if !seen[name] {
			t.Errorf("%s not gathered", name)
		}
		if seen["kubestellar_syncer_"+name] {
			t.Errorf("kubestellar_syncer_%s still gathered", name)
		}
	}
}

// TestSeriesFromTheStart: before anything happens, the series of closed label sets exist:
// reachable 1 and the informer gauges 0 for both sides, api_requests_total 0 for each side and verb
// (with its usual success code), leader 0, build_info; the heartbeat time is absent until the first
// heartbeat is written, and so is it on a standby, which writes none.
func TestSeriesFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	reachability.New(reg, Upstream, Downstream) // as cmd/syncer registers it, on the same registry
	want := `
# HELP kubestellar_syncer_informers_running Informers running, by side.
# TYPE kubestellar_syncer_informers_running gauge
kubestellar_syncer_informers_running{side="downstream"} 0
kubestellar_syncer_informers_running{side="upstream"} 0
# HELP kubestellar_syncer_informers_synced Informers whose cache has synced, by side.
# TYPE kubestellar_syncer_informers_synced gauge
kubestellar_syncer_informers_synced{side="downstream"} 0
kubestellar_syncer_informers_synced{side="upstream"} 0
# HELP kubestellar_syncer_leader 1 while this process leads (always 1 without --leader-elect).
# TYPE kubestellar_syncer_leader gauge
kubestellar_syncer_leader 0
# HELP kubestellar_syncer_reachable 0 while a side is unreachable (the last request got no HTTP response, or one has waited over 10s), else 1 (also before the first request).
# TYPE kubestellar_syncer_reachable gauge
kubestellar_syncer_reachable{side="downstream"} 1
kubestellar_syncer_reachable{side="upstream"} 1
`
	names := []string{"kubestellar_syncer_informers_running", "kubestellar_syncer_informers_synced", "kubestellar_syncer_leader",
		"kubestellar_syncer_reachable", "kubestellar_syncer_last_heartbeat_timestamp_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	var requests []string
	for _, side := range []string{Upstream, Downstream} {
		for _, vc := range []struct{ verb, code string }{{"GET", "200"}, {"LIST", "200"}, {"WATCH", "200"}, {"CREATE", "201"},
			{"UPDATE", "200"}, {"PATCH", "200"}, {"DELETE", "200"}, {"DISCOVERY", "200"}} {
			requests = append(requests, fmt.Sprintf("kubestellar_syncer_api_requests_total{code=%q,side=%q,verb=%q} 0", vc.code, side, vc.verb))
		}
	}
	sort.Strings(requests)
	want = "# HELP kubestellar_syncer_api_requests_total API requests sent by the syncer, by side, verb and HTTP status code.\n" +
		"# TYPE kubestellar_syncer_api_requests_total counter\n" + strings.Join(requests, "\n") + "\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubestellar_syncer_api_requests_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "kubestellar_syncer_build_info"); err != nil || n != 1 {
		t.Errorf("build_info: %d series, %v", n, err)
	}

	m.LastHeartbeat.SetToCurrentTime()
	if n, err := testutil.GatherAndCount(reg, "kubestellar_syncer_last_heartbeat_timestamp_seconds"); err != nil || n != 1 {
		t.Errorf("after a heartbeat: %d series, %v", n, err)
	}
	if v := testutil.ToFloat64(m.LastHeartbeat); v < float64(time.Now().Add(-time.Minute).Unix()) || v > float64(time.Now().Unix()+1) {
		t.Errorf("last heartbeat %v, want now", v)
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

// TestClientGoHooksAndLatency: client-go's hooks record the REST client metrics under the names and
// labels Kubernetes components give them: rest_client_requests_total{code,method,host},
// rest_client_request_duration_seconds{verb,host} and rest_client_rate_limiter_duration_seconds{verb,host},
// with Kubernetes' buckets.
func TestClientGoHooksAndLatency(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	hooks := m.ClientGoHooks()
	u, _ := url.Parse("https://127.0.0.1:6443/api/v1/configmaps")
	hooks.RateLimiterLatency.Observe(context.Background(), "GET", *u, 250*time.Millisecond)
	hooks.RequestLatency.Observe(context.Background(), "GET", *u, 10*time.Millisecond)
	hooks.RequestResult.Increment(context.Background(), "200", "GET", u.Host)
	hooks.RequestResult.Increment(context.Background(), "200", "GET", u.Host)
	hooks.RequestResult.Increment(context.Background(), "<error>", "PATCH", u.Host)
	want := `
# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 2
rest_client_requests_total{code="<error>",host="127.0.0.1:6443",method="PATCH"} 1
# HELP rest_client_rate_limiter_duration_seconds Client side rate limiter latency in seconds. Broken down by verb, and host.
# TYPE rest_client_rate_limiter_duration_seconds histogram
` + histogram("rest_client_rate_limiter_duration_seconds", `host="127.0.0.1:6443",verb="GET"`, restClientBuckets, 0.25) + `
# HELP rest_client_request_duration_seconds Request latency in seconds. Broken down by verb, and host.
# TYPE rest_client_request_duration_seconds histogram
` + histogram("rest_client_request_duration_seconds", `host="127.0.0.1:6443",verb="GET"`, restClientBuckets, 0.01)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"rest_client_requests_total", "rest_client_rate_limiter_duration_seconds", "rest_client_request_duration_seconds"); err != nil {
		t.Error(err)
	}
	for _, old := range []string{"kubestellar_syncer_rest_client_request_duration_seconds", "kubestellar_syncer_rest_client_rate_limiter_duration_seconds"} {
		if n, _ := testutil.GatherAndCount(reg, old); n != 0 {
			t.Errorf("%s still gathered", old)
		}
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

// histogram is the text exposition of a histogram with one observation v.
func histogram(name, labels string, buckets []float64, v float64) string {
	var b strings.Builder
	for _, le := range buckets {
		n := 0
		if v <= le {
			n = 1
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %d\n", name, labels, strconv.FormatFloat(le, 'g', -1, 64), n)
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} 1\n%s_sum{%s} %v\n%s_count{%s} 1\n", name, labels, name, labels, v, name, labels)
	return b.String()
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
