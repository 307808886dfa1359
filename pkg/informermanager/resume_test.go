package informermanager

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWatchResumes: a watch that resumes from a resourceVersion is started again from it while the
// link fails (a dial timeout, a reset: the reflector would list everything again), and returned as
// soon as it starts; an answer of the apiserver (410 Gone) is returned at once, as is any failure of
// a watch without a resourceVersion and one whose informer stopped.
func TestWatchResumes(t *testing.T) {
	defer func(b [2]time.Duration) { resumeBackoff = b }(resumeBackoff)
	resumeBackoff = [2]time.Duration{time.Millisecond, 2 * time.Millisecond}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutError{}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	gone := apierrors.NewResourceExpired("too old resource version")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
	fake := watch.NewFake()
	for _, c := range []struct {
		name    string
		rv      string
		errs    []error // the failures before the watch starts
		want    error   // nil: the watch
		attempt int
	}{
		{"a cut link, then back", "42", []error{timeout, reset, timeout}, nil, 4},
		{"410 Gone: the reflector lists", "42", []error{timeout, gone}, gone, 2},
		{"no resourceVersion", "", []error{timeout}, timeout, 1},
		{"forbidden", "42", []error{forbidden}, forbidden, 1},
	} {
		attempts := 0
		w, err := watchResuming(context.Background(), metav1.ListOptions{ResourceVersion: c.rv}, func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			attempts++
			if o.ResourceVersion != c.rv {
				t.Errorf("%s: attempt %d from resourceVersion %q, want %q", c.name, attempts, o.ResourceVersion, c.rv)
			}
			if attempts <= len(c.errs) {
				return nil, c.errs[attempts-1]
			}
			return fake, nil
		})
		switch {
		case c.want == nil && (err != nil || w != fake || attempts != c.attempt):
			t.Errorf("%s: %v, %d attempts; want the watch after %d", c.name, err, attempts, c.attempt)
		case c.want != nil && (!errors.Is(err, c.want) || attempts != c.attempt):
			t.Errorf("%s: %v after %d attempts; want %v after %d", c.name, err, attempts, c.want, c.attempt)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := watchResuming(ctx, metav1.ListOptions{ResourceVersion: "42"}, func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		return nil, timeout
	}); err == nil {
		t.Error("a stopped informer's watch kept trying")
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
