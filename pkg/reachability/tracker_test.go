package reachability

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReachabilityFromTransport: a side is reachable until a request through its transport gets no
// response; then it is unreachable, with the error and since when, in Reachability and the gauge;
// subscribers hear of it, and of its coming back.
func TestReachabilityFromTransport(t *testing.T) {
	reg := prometheus.NewRegistry()
	tr := New(reg, "upstream", "downstream")
	if ok, _, _ := tr.Reachability("upstream"); !ok {
		t.Error("a side is reachable until a request fails")
	}
	var mu sync.Mutex
	var heard []string
	unsubscribe := tr.Subscribe(func(side string, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, fmt.Sprintf("%s %v", side, ok))
	})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	url := srv.URL
	client := &http.Client{Transport: tr.Transport("upstream", http.DefaultTransport)}
	get := func() error {
		resp, err := client.Get(url + "/api")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if got := gathered(t, reg, "upstream"); got != 1 {
		t.Errorf("reachable = %v after a response", got)
	}
	srv.Close()
	if err := get(); err == nil {
		t.Fatal("request to a closed server succeeded")
	}
	ok, lastErr, since := tr.Reachability("upstream")
	if ok || lastErr == "" || since.IsZero() {
		t.Errorf("after a transport error: ok=%v lastErr=%q since=%v", ok, lastErr, since)
	}
	if got := gathered(t, reg, "upstream"); got != 0 {
		t.Errorf("reachable = %v after a transport error", got)
	}
	tr.observe("upstream", nil)
	unsubscribe()
	tr.observe("upstream", errors.New("again"))
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(heard) != "[upstream false upstream true]" {
		t.Errorf("the subscriber heard %v; want the side going and coming back, and nothing once unsubscribed", heard)
	}
}

// TestHungSideIsUnreachable: a request that has waited longer than HungAfter makes its side
// unreachable (in Reachability and in the gauge at scrape time) though no error came back.
func TestHungSideIsUnreachable(t *testing.T) {
	reg := prometheus.NewRegistry()
	tr := New(reg, "upstream")
	tr.observe("upstream", nil)
	req, _ := http.NewRequest(http.MethodPatch, "https://up/apis/x/v1/things/a", nil)
	tr.track("upstream", req, true)
	tr.mu.Lock()
	tr.inflight["upstream"][req] = time.Now().Add(-HungAfter - time.Second) // waited 11 s
	tr.mu.Unlock()
	ok, msg, _ := tr.Reachability("upstream")
	if ok || !strings.Contains(msg, "no response for") || !strings.Contains(msg, "PATCH /apis/x/v1/things/a") {
		t.Fatalf("hung: ok=%v %q", ok, msg)
	}
	if got := gathered(t, reg, "upstream"); got != 0 {
		t.Errorf("reachable gauge %v while hung", got)
	}
	tr.track("upstream", req, false)
	tr.observe("upstream", nil)
	if ok, _, _ := tr.Reachability("upstream"); !ok || gathered(t, reg, "upstream") != 1 {
		t.Error("not reachable again after a response")
	}
}

// TestRequestTimeout: a request but a watch is bounded by RequestTimeout; a watch is not.
func TestRequestTimeout(t *testing.T) {
	var deadlines []bool
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		_, ok := req.Context().Deadline()
		deadlines = append(deadlines, ok)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	client := &http.Client{Transport: New(nil).Transport("upstream", rt)}
	for _, url := range []string{"https://up/api/v1/configmaps", "https://up/api/v1/configmaps?watch=true"} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if fmt.Sprint(deadlines) != "[true false]" {
		t.Errorf("deadlines %v, want a list bounded and a watch not", deadlines)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// gathered is the reachable gauge of a side, as a scrape sees it.
func gathered(t *testing.T, reg *prometheus.Registry, side string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kubestellar_syncer_reachable" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "side" && l.GetValue() == side {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no reachable series for %s", side)
	return 0
}
