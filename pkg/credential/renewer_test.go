package credential

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var sa = types.NamespacedName{Namespace: "default", Name: "kbs-syncer"}

// jwt makes a token whose claims say whose it is and when it was issued and expires.
func jwt(t *testing.T, who types.NamespacedName, issued time.Time, life time.Duration) string {
	t.Helper()
	return jwtOf(t, who, "uid-1", issued, life)
}

// jwtOf makes a token of a ServiceAccount with that UID.
func jwtOf(t *testing.T, who types.NamespacedName, uid string, issued time.Time, life time.Duration) string {
	t.Helper()
	claims := map[string]interface{}{"iat": issued.Unix(), "exp": issued.Add(life).Unix(), "iss": "https://mailbox",
		"kubernetes.io": map[string]interface{}{"namespace": who.Namespace, "serviceaccount": map[string]interface{}{"name": who.Name, "uid": uid}}}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc(b) + ".signature"
}

func TestParseToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok, err := ParseToken(jwt(t, sa, now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if tok.ServiceAccount != sa || tok.UID != "uid-1" || tok.Issuer != "https://mailbox" || !tok.Issued.Equal(now) || tok.Lifetime() != time.Hour || !tok.RenewAt().Equal(now.Add(30*time.Minute)) {
		t.Errorf("parsed %+v (renew at %v)", tok, tok.RenewAt())
	}
	for name, value := range map[string]string{
		"not a JWT":          "e2e-admin-token",
		"no ServiceAccount":  jwt(t, types.NamespacedName{}, now, time.Hour),
		"no expiry (legacy)": jwt(t, sa, time.Unix(0, 0), 0),
		"claims not base64":  "a.!!!.c",
	} {
		if _, err := ParseToken(value); !errors.Is(err, errNotRenewable) {
			t.Errorf("%s: got %v, want errNotRenewable", name, err)
		}
	}
}

// memStore is a Store in memory whose Load and Save can be made to fail.
type memStore struct {
	mu         sync.Mutex
	value      string
	refuse     error
	refuseLoad error
	saves      int
}

func (s *memStore) Load(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.refuseLoad
}

func (s *memStore) Save(_ context.Context, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	if s.refuse != nil {
		return s.refuse
	}
	s.value = v
	return nil
}

func (s *memStore) set(f func(s *memStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// requester mints tokens at the fake clock's time, or fails while fail is set.
type requester struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	fail  error
	asked []time.Duration
	hook  func() // called with each request
}

func (q *requester) RequestToken(_ context.Context, who types.NamespacedName, life time.Duration) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, life)
	if q.hook != nil {
		q.hook()
	}
	if q.fail != nil {
		return "", q.fail
	}
	return jwt(q.t, who, q.clock.Now(), life), nil
}

func (q *requester) requests() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.asked)
}

func (q *requester) setFail(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fail = err
}

type bed struct {
	clock *clocktesting.FakeClock
	store *memStore
	req   *requester
	reg   *prometheus.Registry
	r     *Renewer
}

// start runs a Renewer of bootstrap (stored: what the store holds first) until the test ends.
func start(t *testing.T, now time.Time, bootstrap, stored string) *bed {
	t.Helper()
	b := &bed{clock: clocktesting.NewFakeClock(now), store: &memStore{value: stored}, reg: prometheus.NewRegistry()}
	b.req = &requester{t: t, clock: b.clock}
	ctx, cancel := context.WithCancel(context.Background())
	b.r = New(ctx, Config{Bootstrap: bootstrap, Store: b.store, Requester: b.req, Clock: b.clock, Registerer: b.reg,
		Jitter: func() float64 { return 0 }})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.r.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// waitTimer waits until Run waits on a timer (it has done what the last step made due).
func (b *bed) waitTimer(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !b.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the renewer set no timer")
		}
		time.Sleep(time.Millisecond)
	}
}

// step moves the clock by d once Run waits, and waits until it waits again (a timer that fired is
// gone from the clock until Run sets the next one, after doing what fell due).
func (b *bed) step(t *testing.T, d time.Duration) {
	t.Helper()
	b.waitTimer(t)
	b.clock.Step(d)
	b.waitTimer(t)
}

func (b *bed) inUse(t *testing.T) Token {
	t.Helper()
	o, err := b.r.Token()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ParseToken(o.AccessToken)
	if err != nil {
		t.Fatalf("the token in use: %v", err)
	}
	return tok
}

// TestRenewsAtHalfLife: nothing is asked before half the token's life; then a token of the same
// life is asked for, used at once, stored, and counted; the next renewal is half its life later.
func TestRenewsAtHalfLife(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := start(t, now, jwt(t, sa, now, time.Hour), "")
	b.step(t, 29*time.Minute)
	if n := b.req.requests(); n != 0 {
		t.Fatalf("%d requests before half the token's life", n)
	}
	b.step(t, time.Minute)
	if n := b.req.requests(); n != 1 || b.req.asked[0] != time.Hour {
		t.Fatalf("requests %v, want one for 1h", b.req.asked)
	}
	if got := b.inUse(t); !got.Issued.Equal(now.Add(30 * time.Minute)) {
		t.Errorf("the token in use was issued at %v, want the renewed one", got.Issued)
	}
	if stored, _ := b.store.Load(context.Background()); stored == "" || stored != b.inUse(t).Value {
		t.Error("the renewed token is not stored")
	}
	if v := testutil.ToFloat64(b.r.renewals.WithLabelValues("success")); v != 1 {
		t.Errorf("success renewals %v, want 1", v)
	}
	if st := b.r.State(); st.Failure != "" || !st.RenewAt.Equal(now.Add(time.Hour)) || !st.Expires.Equal(now.Add(90*time.Minute)) {
		t.Errorf("state %+v", st)
	}
	b.step(t, 30*time.Minute)
	if n := b.req.requests(); n != 2 {
		t.Errorf("%d requests after a second half-life, want 2", n)
	}
}

// TestStartsFromTheStoredToken: a stored token of the same ServiceAccount that expires later than
// the bootstrap token is used from the start; an older one, or another ServiceAccount's (a new
// bootstrap), is not.
func TestStartsFromTheStoredToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	bootstrap := jwt(t, sa, now.Add(-20*time.Minute), time.Hour) // renewed 10 minutes from now
	later := jwt(t, sa, now.Add(-5*time.Minute), time.Hour)
	for name, c := range map[string]struct {
		stored string
		want   string
	}{
		"later":                      {later, later},
		"older":                      {jwt(t, sa, now.Add(-25*time.Minute), time.Hour), bootstrap},
		"another's":                  {jwt(t, types.NamespacedName{Namespace: "default", Name: "other"}, now, time.Hour), bootstrap},
		"a ServiceAccount made anew": {jwtOf(t, sa, "uid-2", now.Add(-5*time.Minute), time.Hour), bootstrap},
		"not a token":                {"garbage", bootstrap},
		"nothing stored":             {"", bootstrap},
	} {
		t.Run(name, func(t *testing.T) {
			b := start(t, now, bootstrap, c.stored)
			b.waitTimer(t)
			if n := b.req.requests(); n != 0 {
				t.Errorf("%d requests before the renewal time", n)
			}
			if got := b.inUse(t).Value; got != c.want {
				t.Errorf("in use: issued %v, want the token %s", b.inUse(t).Issued, name)
			}
		})
	}
}

// TestFailedRenewalIsRetriedAndShown: a refused renewal shows in State and the error count, is
// retried after RetryFirst, then twice as late; a success clears it.
func TestFailedRenewalIsRetriedAndShown(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := start(t, now, jwt(t, sa, now, time.Hour), "")
	b.req.setFail(errors.New("connection refused"))
	b.step(t, 30*time.Minute)
	st := b.r.State()
	if !strings.Contains(st.Failure, "connection refused") || !st.FailingSince.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("state after a failed renewal: %+v", st)
	}
	b.step(t, RetryFirst)
	if n := b.req.requests(); n != 2 {
		t.Fatalf("%d requests after the first retry, want 2", n)
	}
	b.step(t, RetryFirst)
	if n := b.req.requests(); n != 2 {
		t.Fatalf("%d requests %v after the first retry, want 2 (the second waits twice as long)", n, RetryFirst)
	}
	b.req.setFail(nil)
	b.step(t, RetryFirst)
	if n := b.req.requests(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if st := b.r.State(); st.Failure != "" {
		t.Errorf("still failing after a success: %+v", st)
	}
	if v := testutil.ToFloat64(b.r.renewals.WithLabelValues("error")); v != 2 {
		t.Errorf("error renewals %v, want 2", v)
	}
}

// TestRefusedStoreIsSavedAgain: a token the Store refused is in use, the failure shows, and the next
// try saves it without asking for another.
func TestRefusedStoreIsSavedAgain(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := start(t, now, jwt(t, sa, now, time.Hour), "")
	b.store.set(func(s *memStore) { s.refuse = errors.New("secrets is forbidden") })
	b.step(t, 30*time.Minute)
	if st := b.r.State(); !strings.Contains(st.Failure, "forbidden") || !b.inUse(t).Issued.Equal(now.Add(30*time.Minute)) {
		t.Fatalf("after a refused save: state %+v, token issued %v", st, b.inUse(t).Issued)
	}
	b.store.set(func(s *memStore) { s.refuse = nil })
	b.step(t, RetryFirst)
	if stored, _ := b.store.Load(context.Background()); stored != b.inUse(t).Value || b.req.requests() != 1 {
		t.Errorf("saved again: stored the token in use %v, requests %d (want 1)", stored == b.inUse(t).Value, b.req.requests())
	}
	if st := b.r.State(); st.Failure != "" {
		t.Errorf("still failing after the save: %+v", st)
	}
}

// TestTakesAnotherReplicasRenewal: when another replica stored a renewed token, it is taken and
// nothing is asked.
func TestTakesAnotherReplicasRenewal(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := start(t, now, jwt(t, sa, now, time.Hour), "")
	other := jwt(t, sa, now.Add(29*time.Minute), time.Hour)
	b.store.set(func(s *memStore) { s.value = other })
	b.step(t, 30*time.Minute)
	if b.req.requests() != 0 || b.inUse(t).Value != other {
		t.Errorf("requests %d (want 0), in use the other replica's: %v", b.req.requests(), b.inUse(t).Value == other)
	}
}

// TestNotRenewed: a token that is not a ServiceAccount's with an expiry is used as it is; Run returns
// at once and no expiry is reported.
func TestNotRenewed(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := New(context.Background(), Config{Bootstrap: "e2e-admin-token", Registerer: reg})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o, _ := r.Token(); o.AccessToken != "e2e-admin-token" {
		t.Errorf("token %q", o.AccessToken)
	}
	if st := r.State(); st.NotRenewed == "" {
		t.Errorf("state %+v, want NotRenewed", st)
	}
	if n, err := testutil.GatherAndCount(reg, "kubestellar_syncer_upstream_token_expiry_timestamp_seconds"); err != nil || n != 0 {
		t.Errorf("expiry series %d (%v), want none", n, err)
	}
}

// TestRenewalOff: a renewable token whose renewal is off is used as it is, its expiry still reported.
func TestRenewalOff(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reg := prometheus.NewRegistry()
	r := New(context.Background(), Config{Bootstrap: jwt(t, sa, now, time.Hour), Off: "no Secret to store it in", Registerer: reg})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st.NotRenewed != "no Secret to store it in" || !st.Expires.Equal(now.Add(time.Hour)) || !st.RenewAt.IsZero() {
		t.Errorf("state %+v", st)
	}
	if n, err := testutil.GatherAndCount(reg, "kubestellar_syncer_upstream_token_expiry_timestamp_seconds"); err != nil || n != 1 {
		t.Errorf("expiry series %d (%v), want 1", n, err)
	}
}

// TestStoreNeverHoldsRenewalUp: a Store that refuses every Save, or cannot be read, delays no
// renewal: the token is renewed at each half-life all the same.
func TestStoreNeverHoldsRenewalUp(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for name, broken := range map[string]func(s *memStore){
		"refuses saves": func(s *memStore) { s.refuse = errors.New("secrets is forbidden") },
		"cannot load":   func(s *memStore) { s.refuseLoad = errors.New("connection refused") },
	} {
		t.Run(name, func(t *testing.T) {
			b := start(t, now, jwt(t, sa, now, time.Hour), "")
			b.store.set(broken)
			for i := 0; i < 30 && b.req.requests() < 2; i++ {
				b.step(t, 5*time.Minute)
			}
			if n := b.req.requests(); n < 2 {
				t.Fatalf("%d renewals in 2.5 hours of a 1h token, want at least 2", n)
			}
			if got := b.inUse(t); !got.Expires.After(b.clock.Now()) {
				t.Errorf("the token in use expired at %v (now %v)", got.Expires, b.clock.Now())
			}
		})
	}
}

// TestSaveConflictTakesTheOtherReplicasToken: when storing fails because another replica stored a
// token that outlives this one's meanwhile, that token is taken and nothing fails.
func TestSaveConflictTakesTheOtherReplicasToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := start(t, now, jwt(t, sa, now, time.Hour), "")
	other := jwt(t, sa, now.Add(31*time.Minute), time.Hour)
	b.store.set(func(s *memStore) { s.refuse = errors.New("the object has been modified"); s.value = "" })
	b.req.mu.Lock()
	b.req.fail = nil
	b.req.mu.Unlock()
	// The other replica stores its token while this one asks for its own.
	b.req.hook = func() { b.store.set(func(s *memStore) { s.value = other }) }
	b.step(t, 30*time.Minute)
	if st := b.r.State(); st.Failure != "" || b.inUse(t).Value != other {
		t.Errorf("state %+v; in use the other replica's token: %v", st, b.inUse(t).Value == other)
	}
}

// TestPastRenewalTimeRenewsAtOnce: a syncer that starts after its token's half-life renews at once.
func TestPastRenewalTimeRenewsAtOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := start(t, now, jwt(t, sa, now.Add(-40*time.Minute), time.Hour), "")
	b.waitTimer(t)
	if n := b.req.requests(); n != 1 || !b.inUse(t).Issued.Equal(now) {
		t.Errorf("%d requests, token issued %v; want one renewal at start", n, b.inUse(t).Issued)
	}
}
