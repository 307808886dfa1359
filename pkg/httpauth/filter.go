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
	// maxDecisions bounds the cache: past it, expired decisions go, and if none has expired, all.
	maxDecisions = 1024
)

// Filter admits a request when its bearer token is valid at the edge and its user may use the
// request's verb on its path there.
type Filter struct {
	client kubernetes.Interface
	now    func() time.Time

	mu        sync.Mutex
	decisions map[[sha256.Size]byte]decision
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
	return &Filter{client: client, now: time.Now, decisions: map[[sha256.Size]byte]decision{}}
}

// Wrap serves next to the requests the filter admits; the others get 401 (no valid token) or 403
// (not allowed), and a review that could not be made 503 (the edge apiserver did not answer).
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(token) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kubestellar-syncer"`)
			http.Error(w, "Unauthorized: send a bearer token of the edge cluster (a ServiceAccount token) allowed to get "+r.URL.Path, http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(r.Method)
		d, err := f.decide(r.Context(), strings.TrimSpace(token), verb, r.URL.Path)
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

// decide reviews token for verb on path, or reuses a decision made within its lifetime.
func (f *Filter) decide(ctx context.Context, token, verb, path string) (decision, error) {
	key := sha256.Sum256([]byte(verb + "\x00" + path + "\x00" + token))
	now := f.now()
	f.mu.Lock()
	d, ok := f.decisions[key]
	f.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d, nil
	}
	d, err := f.review(ctx, token, verb, path)
	if err != nil {
		return decision{}, err
	}
	d.expires = now.Add(deniedFor)
	if d.code == http.StatusOK {
		d.expires = now.Add(allowedFor)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.decisions) >= maxDecisions {
		for k, old := range f.decisions {
			if !now.Before(old.expires) {
				delete(f.decisions, k)
			}
		}
		if len(f.decisions) >= maxDecisions {
			f.decisions = map[[sha256.Size]byte]decision{}
		}
	}
	f.decisions[key] = d
	return d, nil
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
		reason := "the token is not valid at the edge"
		if tr.Status.Error != "" {
			reason += ": " + tr.Status.Error
		}
		return decision{code: http.StatusUnauthorized, reason: reason}, nil
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
