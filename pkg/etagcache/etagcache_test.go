package etagcache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRevalidates: a discovery document is fetched once, then revalidated (If-None-Match) and served
// from what was kept while the server answers 304; a changed document replaces it; other paths and
// servers without ETags pass through.
func TestRevalidates(t *testing.T) {
	doc, etag := `{"kind":"APIGroupDiscoveryList","items":[]}`, `"v1"`
	var full, notModified, other int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/configmaps" {
			other++
			_, _ = io.WriteString(w, "list")
			return
		}
		if r.Header.Get("If-None-Match") == etag {
			notModified++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full++
		w.Header().Set("ETag", etag)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, doc)
	}))
	defer srv.Close()
	client := &http.Client{Transport: New(http.DefaultTransport)}
	get := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" && path != "/api/v1/configmaps" {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, resp.Header)
		}
		return string(body)
	}
	for i := 0; i < 3; i++ {
		if got := get("/clusters/root/apis"); got != doc {
			t.Errorf("read %d: %q", i, got)
		}
	}
	if full != 1 || notModified != 2 {
		t.Errorf("%d full responses, %d not modified; want 1 and 2", full, notModified)
	}
	doc, etag = `{"kind":"APIGroupDiscoveryList","items":[{}]}`, `"v2"`
	if got := get("/clusters/root/apis"); got != doc {
		t.Errorf("after a change: %q", got)
	}
	if got := get("/clusters/root/apis"); got != doc || full != 2 || notModified != 3 {
		t.Errorf("the changed document is not kept: %q, %d full, %d not modified", got, full, notModified)
	}
	get("/api/v1/configmaps")
	get("/api/v1/configmaps")
	if other != 2 {
		t.Errorf("a LIST served %d times for 2 reads", other)
	}
	if !Discovery("/api") || !Discovery("/apis/") || Discovery("/apis/apps") || Discovery("/clusters/x") || !Discovery("/clusters/x/api") {
		t.Error("Discovery paths")
	}
}
