package reachability

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HungAfter is how long a request may wait for its response before its side counts as unreachable.
const HungAfter = 10 * time.Second

// RequestTimeout bounds every request but watches.
const RequestTimeout = 30 * time.Second

// Tracker follows the reachability of the sides whose requests go through its Transports.
type Tracker struct {
	gauge *prometheus.GaugeVec

	mu       sync.Mutex
	sides    map[string]state
	inflight map[string]map[*http.Request]time.Time // requests waiting for a response, by side
	subs     map[int]func(side string, reachable bool)
	nextSub  int
}

// state is what the last request to a side said.
type state struct {
	ok      bool
	lastErr string
	since   time.Time
}

// New returns a Tracker whose gauge kubestellar_syncer_reachable{side} is registered on reg, at 1 for
// each of sides from the start (a side not asked yet counts as reachable).
func New(reg prometheus.Registerer, sides ...string) *Tracker {
	t := &Tracker{
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kubestellar_syncer", Name: "reachable",
			Help: "0 while a side is unreachable (the last request got no HTTP response, or one has waited over 10s), else 1 (also before the first request)."},
			[]string{"side"}),
		sides: map[string]state{}, inflight: map[string]map[*http.Request]time.Time{}, subs: map[int]func(string, bool){},
	}
	for _, side := range sides {
		t.gauge.WithLabelValues(side).Set(1)
	}
	if reg != nil {
		reg.MustRegister(collector{t})
	}
	return t
}

// Subscribe has fn told when a side becomes unreachable, or reachable again; until unsubscribe is
// called. fn must not block.
func (t *Tracker) Subscribe(fn func(side string, reachable bool)) (unsubscribe func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.nextSub
	t.nextSub++
	t.subs[id] = fn
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.subs, id)
	}
}

// Reachability tells whether a side answers: the last request got an HTTP response (true before any
// request) and none has waited longer than HungAfter for one. When not, it gives the last transport
// error (or the wait) and since when that holds.
func (t *Tracker) Reachability(side string) (ok bool, lastErr string, since time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var oldest time.Time
	var waiting *http.Request
	for req, at := range t.inflight[side] {
		if oldest.IsZero() || at.Before(oldest) {
			oldest, waiting = at, req
		}
	}
	if waiting != nil && time.Since(oldest) > HungAfter {
		t.gauge.WithLabelValues(side).Set(0)
		return false, fmt.Sprintf("no response for %s to %s %s", time.Since(oldest).Round(time.Second), waiting.Method, waiting.URL.Path),
			oldest.Add(HungAfter)
	}
	s, seen := t.sides[side]
	if !seen {
		return true, "", time.Time{}
	}
	if s.ok {
		t.gauge.WithLabelValues(side).Set(1)
	}
	return s.ok, s.lastErr, s.since
}

// observe records what a request's outcome says of its side, and tells the subscribers of a change.
func (t *Tracker) observe(side string, err error) {
	t.mu.Lock()
	prev, seen := t.sides[side]
	now := state{ok: err == nil, since: prev.since}
	if err != nil {
		now.lastErr = err.Error()
	}
	changed := !seen || prev.ok != now.ok
	if changed {
		now.since = time.Now()
		v := 0.0
		if now.ok {
			v = 1
		}
		t.gauge.WithLabelValues(side).Set(v)
	}
	t.sides[side] = now
	subs := make([]func(string, bool), 0, len(t.subs))
	for _, fn := range t.subs {
		subs = append(subs, fn)
	}
	t.mu.Unlock()
	if changed && seen {
		for _, fn := range subs {
			fn(side, now.ok)
		}
	}
}

// track records a request as waiting for its response, or done.
func (t *Tracker) track(side string, req *http.Request, waiting bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight[side] == nil {
		t.inflight[side] = map[*http.Request]time.Time{}
	}
	if waiting {
		t.inflight[side][req] = time.Now()
	} else {
		delete(t.inflight[side], req)
	}
}

// Transport sends a side's requests through rt: every request but watches with a RequestTimeout and
// followed while it waits for its response; the outcome of each (a response, or none) recorded.
func (t *Tracker) Transport(side string, rt http.RoundTripper) http.RoundTripper {
	return roundTripper{side: side, next: rt, t: t}
}

type roundTripper struct {
	side string
	next http.RoundTripper
	t    *Tracker
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		return r.send(req, req.Context(), func() {})
	}
	ctx, cancel := context.WithTimeout(req.Context(), RequestTimeout)
	timed := req.WithContext(ctx)
	r.t.track(r.side, timed, true)
	defer r.t.track(r.side, timed, false) // waiting for the response, not reading its body
	return r.send(timed, req.Context(), cancel)
}

// send sends req and records the outcome. cancel releases req's context: at once when it fails, else
// when the response body is closed (the body is read after RoundTrip returns).
func (r roundTripper) send(req *http.Request, caller context.Context, cancel context.CancelFunc) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	}
	if caller.Err() == nil {
		// A request the caller cancelled says nothing about the server; one that timed out does.
		r.t.observe(r.side, err)
	}
	if err != nil {
		cancel()
	}
	return resp, err
}

// cancelOnClose releases a request's timeout when its response body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// collector brings the gauge up to date (a request waiting too long) at each scrape.
type collector struct{ t *Tracker }

func (c collector) Describe(ch chan<- *prometheus.Desc) { c.t.gauge.Describe(ch) }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.t.mu.Lock()
	sides := make([]string, 0, len(c.t.sides)+len(c.t.inflight))
	for side := range c.t.sides {
		sides = append(sides, side)
	}
	for side := range c.t.inflight {
		sides = append(sides, side)
	}
	c.t.mu.Unlock()
	for _, side := range sides {
		c.t.Reachability(side)
	}
	c.t.gauge.Collect(ch)
}
