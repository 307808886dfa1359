package httpauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/logging"
)

const (
	// allowedFor and deniedFor are how long a decision is reused: RBAC changes and revoked tokens
	// take effect within them.
	allowedFor = time.Minute
	deniedFor  = 10 * time.Second
	// maxDecisions bounds each of the two caches (admissions, refusals): past it, expired decisions
	// go, and if none has expired, all of that cache (junk tokens flush the refusals only).
	maxDecisions = 1024
	// reviewTimeout bounds the reviews of one request: a hung edge apiserver is a 503, not a request
	// held open.
	reviewTimeout = 10 * time.Second
)

// Filter admits a request when its bearer token is valid at the edge and its user may use the
// request's verb on its path there.
type Filter struct {
	client kubernetes.Interface
	now    func() time.Time

	mu                sync.Mutex
	admitted, refused map[[sha256.Size]byte]decision
}

// decision is the outcome of reviewing one token for one verb and path.
type decision struct {
	code    int // http.StatusOK, StatusUnauthorized or StatusForbidden
	user    string
	reason  string
	expires time.Time
}

// NewFilter reviews tokens through client (the edge's: TokenReview and SubjectAccessReview create).
func NewFilter(client kubernetes.Interface) *Filter {
	return &Filter{client: client, now: time.Now, admitted: map[[sha256.Size]byte]decision{}, refused: map[[sha256.Size]byte]decision{}}
}

// Wrap serves next to the requests the filter admits; the others get 401 (no valid token) or 403
// (not allowed), and a review that could not be made 503 (the edge apiserver did not answer).
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kubestellar-syncer"`)
			http.Error(w, "Unauthorized: send a bearer token of the edge cluster (a ServiceAccount token) allowed to get "+r.URL.Path, http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(r.Method)
		d, err := f.decide(r.Context(), token, verb, r.URL.Path)
		if err != nil {
			klog.FromContext(r.Context()).Error(err, "Could not review a request to the metrics address", "path", r.URL.Path)
			http.Error(w, "Service Unavailable: the edge apiserver could not review the token", http.StatusServiceUnavailable)
			return
		}
		if d.code != http.StatusOK {
			klog.FromContext(r.Context()).V(logging.Skip).Info("Refused a request to the metrics address", "path", r.URL.Path, "verb", verb,
				"user", d.user, "reason", d.reason, "remote", r.RemoteAddr)
			if d.code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kubestellar-syncer"`)
			}
			http.Error(w, http.StatusText(d.code)+": "+d.reason, d.code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer is the token of an Authorization header of the Bearer scheme (any case, as RFC 7235 has it).
func bearer(header string) (string, bool) {
	fields := strings.Fields(header)
	if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") {
		return "", false
	}
	return fields[1], true
}

// decide reviews token for verb on path, or reuses a decision made within its lifetime: a token
// found invalid is refused for every path, an admission or a refusal of access holds for its path.
func (f *Filter) decide(ctx context.Context, token, verb, path string) (decision, error) {
	anyPath := sha256.Sum256([]byte(token))
	key := sha256.Sum256([]byte(verb + "\x00" + path + "\x00" + token))
	now := f.now()
	f.mu.Lock()
	d, ok := f.admitted[key]
	if !ok {
		if d, ok = f.refused[anyPath]; !ok {
			d, ok = f.refused[key]
		}
	}
	f.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	d, err := f.review(ctx, token, verb, path)
	if err != nil {
		return decision{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch d.code {
	case http.StatusOK:
		d.expires = now.Add(allowedFor)
		f.admitted = remember(f.admitted, key, d, now)
	case http.StatusUnauthorized:
		d.expires = now.Add(deniedFor)
		f.refused = remember(f.refused, anyPath, d, now)
	default:
		d.expires = now.Add(deniedFor)
		f.refused = remember(f.refused, key, d, now)
	}
	return d, nil
}

// remember adds a decision to a cache, making room first: the expired go, then, if none had, all.
func remember(cache map[[sha256.Size]byte]decision, key [sha256.Size]byte, d decision, now time.Time) map[[sha256.Size]byte]decision {
	if len(cache) >= maxDecisions {
		for k, old := range cache {
			if !now.Before(old.expires) {
				delete(cache, k)
			}
		}
		if len(cache) >= maxDecisions {
			cache = map[[sha256.Size]byte]decision{}
		}
	}
	cache[key] = d
	return cache
}

// review asks the edge apiserver who the token's user is, then whether that user may use verb on
// path.
func (f *Filter) review(ctx context.Context, token, verb, path string) (decision, error) {
	tr, err := f.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		// The apiserver's detail stays in the log (-v=4), not in the answer to an unknown caller.
		klog.FromContext(ctx).V(logging.Skip).Info("A token sent to the metrics address is not valid at the edge", "detail", tr.Status.Error)
		return decision{code: http.StatusUnauthorized, reason: "the token is not valid at the edge"}, nil
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := f.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb}}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed {
		reason := fmt.Sprintf("%s may not %s %s at the edge", u.Username, verb, path)
		if sar.Status.Reason != "" {
			reason += " (" + sar.Status.Reason + ")"
		}
		return decision{code: http.StatusForbidden, user: u.Username, reason: reason}, nil
	}
	return decision{code: http.StatusOK, user: u.Username}, nil
}
