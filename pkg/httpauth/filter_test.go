package httpauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// edge is a fake edge apiserver that knows two tokens: "scraper" (may get /metrics) and "other"
// (may get nothing); it counts the reviews it is asked for.
func edge(t *testing.T, down *bool) (*kubefake.Clientset, *int) {
	t.Helper()
	client := kubefake.NewClientset()
	reviews := 0
	client.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		reviews++
		if *down {
			return true, nil, errors.New("connection refused")
		}
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch tr.Spec.Token {
		case "scraper", "other":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "system:serviceaccount:monitoring:" + tr.Spec.Token, Groups: []string{"system:serviceaccounts"},
				Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		default:
			tr.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, tr, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		reviews++
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		attrs := sar.Spec.NonResourceAttributes
		if attrs == nil || sar.Spec.Extra["k"][0] != "v" {
			t.Errorf("SubjectAccessReview without the user's extra or the non-resource attributes: %+v", sar.Spec)
		}
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:scraper" && attrs.Path == "/metrics" && attrs.Verb == "get"
		return true, sar, nil
	})
	return client, &reviews
}

// TestFilter: no token and an invalid one get 401, a user not allowed 403, an allowed one the page;
// decisions are reused within their lifetime and made again after it; an edge apiserver that does
// not answer gives 503, never the page.
func TestFilter(t *testing.T) {
	down := false
	client, reviews := edge(t, &down)
	f := NewFilter(client)
	now := time.Unix(1_000_000, 0)
	f.now = func() time.Time { return now }
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	get := func(path, token string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "forged", http.StatusUnauthorized},
		{"/metrics", "other", http.StatusForbidden},
		{"/report", "scraper", http.StatusForbidden},
		{"/metrics", "scraper", http.StatusOK},
	} {
		code, body := get(tc.path, tc.token)
		if code != tc.want || (code == http.StatusOK) != (body == "metrics") {
			t.Errorf("GET %s with %q: %d %q, want %d", tc.path, tc.token, code, body, tc.want)
		}
	}
	made := *reviews
	get("/metrics", "scraper")
	get("/metrics", "other")
	if *reviews != made {
		t.Errorf("decisions within their lifetime made %d more reviews, want none", *reviews-made)
	}
	now = now.Add(deniedFor + time.Second) // the denial expired, the admission not yet
	get("/metrics", "scraper")
	get("/metrics", "other")
	if got := *reviews - made; got != 2 {
		t.Errorf("after a denial's lifetime %d reviews, want 2 (the denied user's token and access again)", got)
	}
	now = now.Add(allowedFor)
	down = true
	if code, body := get("/metrics", "scraper"); code != http.StatusServiceUnavailable || body == "metrics" {
		t.Errorf("with the edge apiserver down: %d %q, want 503", code, body)
	}
}

// TestFilterBoundsItsCache: past maxDecisions distinct junk tokens the refusals start again instead
// of growing, and the admissions stay: a flood of junk costs a scraper nothing.
func TestFilterBoundsItsCache(t *testing.T) {
	down := false
	client, reviews := edge(t, &down)
	f := NewFilter(client)
	h := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	get := func(path, header string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := get("/metrics", "bearer  scraper"); code != http.StatusOK { // the scheme in any case, spaces
		t.Fatalf("the scraper with a lowercase scheme: %d", code)
	}
	for i := range maxDecisions + 10 {
		get("/metrics", fmt.Sprintf("Bearer forged-%d", i))
	}
	if n := len(f.refused); n > maxDecisions {
		t.Errorf("%d refusals cached, want at most %d", n, maxDecisions)
	}
	made := *reviews
	if code := get("/metrics", "Bearer scraper"); code != http.StatusOK || *reviews != made {
		t.Errorf("after a flood of junk tokens the scraper got %d with %d new reviews; want 200 from the cache", code, *reviews-made)
	}
	get("/metrics", "Bearer forged-again")
	made = *reviews
	if code := get("/report", "Bearer forged-again"); code != http.StatusUnauthorized || *reviews != made {
		t.Errorf("an invalid token on another path: %d with %d new reviews; want 401 from the cache", code, *reviews-made)
	}
	for _, header := range []string{"Basic abc", "Bearer", "Bearer a b"} {
		if code := get("/metrics", header); code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", header, code)
		}
	}
}
