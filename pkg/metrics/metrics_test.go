package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
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
