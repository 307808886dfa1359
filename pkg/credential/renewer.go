package credential

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Requester asks the upstream for a new token of a ServiceAccount.
type Requester interface {
	RequestToken(ctx context.Context, sa types.NamespacedName, lifetime time.Duration) (string, error)
}

// TokenRequests asks through the upstream's TokenRequest API (create serviceaccounts/token).
type TokenRequests struct {
	ServiceAccounts corev1client.ServiceAccountsGetter
}

// RequestToken requests a token of sa valid for lifetime (the server may grant less).
func (t TokenRequests) RequestToken(ctx context.Context, sa types.NamespacedName, lifetime time.Duration) (string, error) {
	tr, err := t.ServiceAccounts.ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(lifetime.Seconds()))}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// MinLifetime is the shortest life a TokenRequest may ask for.
const MinLifetime = 10 * time.Minute

// Retries after a failed renewal start at RetryFirst and double up to RetryMax.
const (
	RetryFirst = 10 * time.Second
	RetryMax   = 5 * time.Minute
)

// Config is what a Renewer needs.
type Config struct {
	// Bootstrap is the token of the upstream kubeconfig.
	Bootstrap string
	// Off, when set, says why the token is not to be renewed; its expiry is still reported.
	Off string
	// Store keeps renewed tokens across restarts; nil: in memory only.
	Store Store
	// Requester asks for new tokens; it must authenticate with the Renewer itself (TokenSource).
	Requester Requester
	// Clock is the time; nil: the real one.
	Clock clock.WithTicker
	// Registerer, if set, gets the Renewer's metrics.
	Registerer prometheus.Registerer
	// Jitter gives the share, in [0, 1), of a tenth of the token's life that this Renewer waits past
	// half of it; nil: a random one.
	Jitter func() float64
}

// Renewer holds the upstream token and renews it when half its life has gone.
type Renewer struct {
	cfg      Config
	renewals *prometheus.CounterVec
	jitter   float64

	mu sync.Mutex
	// token is the token in use: parsed when renewable, only its Value otherwise.
	token Token
	// notRenewed says why the token is used as it is; nil when it is renewed.
	notRenewed error
	// unsaved is a renewed token the Store refused, saved again before anything else.
	unsaved string
	// failure is the last renewal's error, since failingSince; nil after a success.
	failure      error
	failingSince time.Time
}

// New returns the Renewer of the bootstrap token, starting from the stored token instead when that is
// the same ServiceAccount's and expires later (renewed before a restart).
func New(ctx context.Context, cfg Config) *Renewer {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	logger := klog.FromContext(ctx)
	r := &Renewer{cfg: cfg, jitter: cfg.Jitter(), renewals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kubestellar_syncer", Name: "upstream_token_renewals_total",
		Help: "Renewals of the upstream ServiceAccount token (TokenRequest), by result: success or error."}, []string{"result"})}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(collector{r})
	}
	t, err := ParseToken(cfg.Bootstrap)
	switch {
	case err != nil:
		t = Token{Value: cfg.Bootstrap}
	case cfg.Off != "":
		err = errors.New(cfg.Off)
	}
	r.token = t
	if err != nil {
		r.notRenewed = err
		logger.Info("The upstream credential is used as it is, never renewed", "reason", err.Error(), "expires", stamp(t.Expires))
		return r
	}
	if cfg.Store != nil {
		if _, err := r.adoptStored(ctx); err != nil {
			logger.Error(err, "Starting from the bootstrap token")
		}
	}
	t = r.current()
	logger.Info("Renewing the upstream token when half its life has gone", "serviceAccount", t.ServiceAccount.String(),
		"expires", stamp(t.Expires), "renewAt", stamp(r.renewAt(t)))
	return r
}

// Token is the token in use, for client-go's transport (transport.TokenSourceWrapTransport).
func (r *Renewer) Token() (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: r.current().Value, TokenType: "Bearer"}, nil
}

var _ oauth2.TokenSource = &Renewer{}

// Run renews the token when half its life has gone, and retries a failed renewal with back-off,
// until ctx is done. It returns at once when the token is not renewed. It waits at most MaxWait at a
// time and looks at the clock again: a timer does not count the time a machine spends suspended.
func (r *Renewer) Run(ctx context.Context) error {
	if r.notRenewable() {
		return nil
	}
	logger := klog.FromContext(ctx)
	failures := 0 // in a row
	var retryAt time.Time
	for {
		at := r.renewAt(r.current())
		if failures > 0 {
			at = retryAt
		}
		if wait := at.Sub(r.cfg.Clock.Now()); wait > 0 {
			timer := r.cfg.Clock.NewTimer(min(wait, MaxWait))
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C():
			}
			continue
		}
		err := r.renew(ctx)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() != nil:
			return ctx.Err() // stopped midway: not a failure (runAll takes cancellation for none)
		default:
			r.failed(err)
			failures++
			retryAt = r.cfg.Clock.Now().Add(retryAfter(failures))
			logger.Error(err, "Renewing the upstream token failed; retrying", "retryIn", retryAfter(failures).String(), "expires", stamp(r.current().Expires))
		}
	}
}

// MaxWait is the longest the Renewer waits before it looks at the clock again.
const MaxWait = time.Minute

// retryAfter is how long to wait after failures renewals in a row failed.
func retryAfter(failures int) time.Duration {
	d := RetryFirst
	for i := 1; i < failures && d < RetryMax; i++ {
		d *= 2
	}
	return min(d, RetryMax)
}

// renewAt is when this Renewer renews t: half its life, and a little later at random (up to a tenth of
// its life), so that the replicas of a syncer seldom renew at once (the first stores its token, the
// others take it).
func (r *Renewer) renewAt(t Token) time.Time {
	return t.RenewAt().Add(time.Duration(r.jitter * float64(t.Lifetime()) / 10))
}

// renew takes a token another replica stored, stores a token the Store refused before while it is
// not due for renewal, or asks for a new one and stores it. The Store is a help, never a condition:
// a Store that cannot be read or written delays no renewal.
func (r *Renewer) renew(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if r.cfg.Store != nil {
		adopted, err := r.adoptStored(ctx)
		switch {
		case err != nil:
			logger.Error(err, "Renewing without the stored upstream token")
		case adopted && r.cfg.Clock.Now().Before(r.renewAt(r.current())):
			r.succeeded()
			logger.Info("Took the upstream token another replica renewed", "expires", stamp(r.current().Expires))
			return nil
		}
	}
	if unsaved := r.pendingSave(); unsaved != "" && r.cfg.Clock.Now().Before(r.renewAt(r.current())) {
		return r.save(ctx, unsaved)
	}
	cur := r.current()
	value, err := r.cfg.Requester.RequestToken(ctx, cur.ServiceAccount, max(cur.Lifetime().Round(time.Second), MinLifetime))
	if err != nil {
		r.renewals.WithLabelValues("error").Inc()
		return fmt.Errorf("requesting a token of ServiceAccount %s upstream: %w", cur.ServiceAccount, err)
	}
	t, err := ParseToken(value)
	if err == nil && !t.sameIdentity(cur) {
		err = fmt.Errorf("it is not the same ServiceAccount's (%s, uid %q, issuer %q)", t.ServiceAccount, t.UID, t.Issuer)
	}
	if err != nil {
		r.renewals.WithLabelValues("error").Inc()
		return fmt.Errorf("the upstream's new token is not usable: %w", err)
	}
	r.use(t)
	r.renewals.WithLabelValues("success").Inc()
	logger.Info("Renewed the upstream token", "expires", stamp(t.Expires), "renewAt", stamp(r.renewAt(t)))
	return r.save(ctx, value)
}

// save stores a renewed token, in use already. Refused, it is kept to be stored at the next try,
// unless the Store holds a token that outlives it (another replica stored it meanwhile: taken).
func (r *Renewer) save(ctx context.Context, value string) error {
	if r.cfg.Store == nil {
		r.succeeded()
		return nil
	}
	err := r.cfg.Store.Save(ctx, value)
	if err != nil {
		if adopted, lerr := r.adoptStored(ctx); lerr == nil && adopted {
			err = nil
		}
	}
	r.mu.Lock()
	r.unsaved = ""
	if err != nil {
		r.unsaved = value
	}
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w (the renewed token is in use; a restart before it is stored starts from the older one)", err)
	}
	r.succeeded()
	return nil
}

// adoptStored takes the stored token when it is the same ServiceAccount's and expires later than
// the one in use; it tells whether it did.
func (r *Renewer) adoptStored(ctx context.Context) (bool, error) {
	value, err := r.cfg.Store.Load(ctx)
	if err != nil || value == "" {
		return false, err
	}
	t, ok := outlives(value, r.current())
	if ok {
		r.use(t)
		r.mu.Lock()
		r.unsaved = "" // the stored one outlives it
		r.mu.Unlock()
	}
	return ok, nil
}

// outlives tells whether value is a token of cur's ServiceAccount that expires after cur; not when it
// is not a token, or another identity's (a new bootstrap, a ServiceAccount made anew), or older: the
// one in use stays.
func outlives(value string, cur Token) (Token, bool) {
	t, err := ParseToken(value)
	return t, err == nil && t.sameIdentity(cur) && t.Expires.After(cur.Expires)
}

func (r *Renewer) current() Token {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.token
}

func (r *Renewer) use(t Token) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.token = t
}

func (r *Renewer) notRenewable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notRenewed != nil
}

func (r *Renewer) pendingSave() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unsaved
}

func (r *Renewer) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure == nil {
		r.failingSince = r.cfg.Clock.Now()
	}
	r.failure = err
}

func (r *Renewer) succeeded() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failure, r.failingSince = nil, time.Time{}
}

// State is how the upstream credential fares, for the SyncerConfigs' conditions.
type State struct {
	// NotRenewed says why the credential is used as it is ("" when it is renewed).
	NotRenewed string
	// ServiceAccount and Expires are those of the token in use (zero when it is not a
	// ServiceAccount token with an expiry); RenewAt is when it is renewed (zero: never).
	ServiceAccount   types.NamespacedName
	Expires, RenewAt time.Time
	// Failure is why renewing has failed since FailingSince ("" while it has not).
	Failure      string
	FailingSince time.Time
	// Urgent is true once less than a quarter of the token's life is left (the alert's threshold):
	// renewing has failed for a quarter of it, or it is not renewed.
	Urgent bool
}

// State is how the credential fares now.
func (r *Renewer) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := State{ServiceAccount: r.token.ServiceAccount, Expires: r.token.Expires}
	if !s.Expires.IsZero() {
		s.Urgent = r.cfg.Clock.Now().After(r.token.Expires.Add(-r.token.Lifetime() / 4))
	}
	if r.notRenewed != nil {
		s.NotRenewed = r.notRenewed.Error()
		return s
	}
	s.RenewAt = r.renewAt(r.token)
	if r.failure != nil {
		s.Failure, s.FailingSince = r.failure.Error(), r.failingSince
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// collector reports the token's expiry and issue times (when it has them) and the renewals.
type collector struct{ r *Renewer }

var (
	expiryDesc = prometheus.NewDesc("kubestellar_syncer_upstream_token_expiry_timestamp_seconds",
		"When the upstream ServiceAccount token in use expires (Unix time); absent when the credential is not a ServiceAccount token with an expiry.", nil, nil)
	issuedDesc = prometheus.NewDesc("kubestellar_syncer_upstream_token_issued_timestamp_seconds",
		"When the upstream ServiceAccount token in use was issued (Unix time); the syncer renews it when half its life has gone.", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- expiryDesc
	ch <- issuedDesc
	c.r.renewals.Describe(ch)
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	if t := c.r.current(); !t.Expires.IsZero() {
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(t.Expires.Unix()))
		ch <- prometheus.MustNewConstMetric(issuedDesc, prometheus.GaugeValue, float64(t.Issued.Unix()))
	}
	c.r.renewals.Collect(ch)
}
