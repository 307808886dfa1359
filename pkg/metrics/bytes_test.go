package metrics

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestResource(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/a/configmaps":                                   "configmaps",
		"/api/v1/namespaces/a/configmaps/c":                                 "configmaps",
		"/api/v1/namespaces":                                                "namespaces",
		"/api/v1/namespaces/a":                                              "namespaces",
		"/api/v1/watch/namespaces/a/configmaps":                             "configmaps",
		"/apis/apps/v1/namespaces/a/deployments/web/status":                 "deployments.apps",
		"/clusters/root:ws/apis/edge.kubestellar.io/v2alpha1/syncerconfigs": "syncerconfigs.edge.kubestellar.io",
		"/apis/apps/v1":                                                     "",
		"/api":                                                              "",
		"/version":                                                          "",
	} {
		if got := Resource(path); got != want {
			t.Errorf("Resource(%s) = %q, want %q", path, got, want)
		}
	}
}

// TestBytesCounted: a request's body is counted as sent; a response's as received as it travelled,
// compressed when the server compressed it, while the caller reads it decompressed; a caller that
// asked for an encoding itself gets the body as it came.
func TestBytesCounted(t *testing.T) {
	list := strings.Repeat(`{"kind":"ConfigMap","data":{"k":"v"}},`, 500)
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	_, _ = zw.Write([]byte(list))
	_ = zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("Accept-Encoding") == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(compressed.Bytes())
			return
		}
		_, _ = w.Write([]byte(list))
	}))
	defer srv.Close()
	m := New(prometheus.NewRegistry())
	client := &http.Client{Transport: m.InstrumentTransport("upstream", http.DefaultTransport)}
	resp, err := client.Get(srv.URL + "/api/v1/namespaces/a/configmaps")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != list {
		t.Fatalf("the caller read %d bytes, not the list", len(body))
	}
	if got := testutil.ToFloat64(m.Bytes.WithLabelValues("upstream", Received, "LIST", "configmaps")); got != float64(compressed.Len()) {
		t.Errorf("received %v bytes, want the %d compressed (of %d)", got, compressed.Len(), len(list))
	}
	resp, err = client.Post(srv.URL+"/apis/apps/v1/namespaces/a/deployments", "application/json", strings.NewReader(`{"kind":"Deployment"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := testutil.ToFloat64(m.Bytes.WithLabelValues("upstream", Sent, "CREATE", "deployments.apps")); got != float64(len(`{"kind":"Deployment"}`)) {
		t.Errorf("sent %v bytes", got)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/a/configmaps", nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != list {
		t.Errorf("asked for identity, read %d bytes", len(body))
	}
}
