package informermanager

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/logging"
)

// Resuming a watch. client-go's reflector retries a watch from where it was only when the apiserver
// refused the connection (or answered 429); any other failure to start one (a dial that times out
// on a cut link, a TLS handshake that never ends, a connection reset) makes it list everything
// again. On an edge link that is cut for minutes, every informer would then re-list in full when the
// link returns. So a watch that resumes from a resourceVersion is started again here, from that same
// resourceVersion, until it starts, the apiserver answers (an API error: a 410 Gone then lists, as
// the reflector does), or the informer stops.

// resumeBackoff is the wait between attempts: doubling from the first to the last, each jittered.
var resumeBackoff = [2]time.Duration{500 * time.Millisecond, 8 * time.Second}

// watchResuming starts a watch with watchFn, retrying one that resumes from a resourceVersion on
// failures of the connection rather than answers of the apiserver.
func watchResuming(ctx context.Context, o metav1.ListOptions, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
	w, err := watchFn(ctx, o)
	if err == nil || o.ResourceVersion == "" || !linkFailure(err) {
		return w, err
	}
	logger := klog.FromContext(ctx)
	wait := resumeBackoff[0]
	for attempt := 1; ; attempt++ {
		logger.V(logging.Skip).Info("Watch could not start; trying again from its resourceVersion rather than listing again", "resourceVersion", o.ResourceVersion, "attempt", attempt, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		if w, err = watchFn(ctx, o); err == nil || !linkFailure(err) {
			return w, err
		}
		wait = min(2*wait, resumeBackoff[1])
	}
}

// linkFailure tells whether err is the connection's rather than the apiserver's answer.
func linkFailure(err error) bool {
	var status apierrors.APIStatus
	return !errors.As(err, &status) && !errors.Is(err, context.Canceled)
}
