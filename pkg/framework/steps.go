package framework

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/logging"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// A Write is one direction's create or update of one object, which Writes.Do takes through the
// steps downsync and upsync share, in order: who owns what is there (an object the syncer may not
// write over stops here, reported), is the destination up to date, is the key backing off a loop
// with another writer, would this write complete such a loop (then the destination is read as the
// other writer left it, to name it), the write itself, and its record. Each direction says what
// each step means for it.
type Write interface {
	// Blocked is the object in the way that the syncer may not write over, reported as a conflict;
	// nil when the way is clear.
	Blocked(ctx context.Context) *Blocked
	// Creating tells whether the destination object is not known to exist: a conflict a create may
	// still meet (the name taken by an object the cache does not show) is kept until it succeeds.
	Creating() bool
	// Skip says why no write is needed (logged at logging.Skip); "" when one is.
	Skip() string
	// Content is a digest of what would be written: the same content written again and again is a
	// loop.
	Content() string
	// Before reads the destination as it is now (the other writer's field managers name it).
	Before(ctx context.Context) *unstructured.Unstructured
	// Do writes.
	Do(ctx context.Context, before *unstructured.Unstructured) Outcome
}

// Blocked is an object in the way of a write: a conflict, logged once, reported as an Event on About.
type Blocked struct {
	LogMsg, Reason, Event string
	About                 runtime.Object
	// Recheck is when to look again.
	Recheck time.Duration
}

// Outcome is what a write did.
type Outcome struct {
	// Result is metrics.Created or metrics.Updated; "" when nothing was written (or it failed).
	Result string
	// Msg and KeysAndValues are the line logged at logging.Change for it.
	Msg           string
	KeysAndValues []interface{}
	// About is the upstream object a loop is reported on.
	About *unstructured.Unstructured
	// Requeue, when positive, looks at the key again after that long (not an error).
	Requeue time.Duration
	// Err fails the write: retried with backoff (the direction recorded it, Writes.Failed).
	Err error
}

// Do takes a write through the steps (Write), and tells when to look at the key again.
func (w *Writes) Do(ctx context.Context, key Key, op Write) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	if b := op.Blocked(ctx); b != nil {
		w.Conflict(ctx, key, b.About, b.LogMsg, b.Reason, b.Event)
		return b.Recheck, nil
	}
	if !op.Creating() {
		w.ClearConflict(key)
	}
	if why := op.Skip(); why != "" {
		logger.V(logging.Skip).Info(why)
		return 0, nil
	}
	if left, backingOff := w.Backoff(key); backingOff {
		logger.V(logging.Skip).Info("Backing off a write loop with another writer", "for", left.String())
		return left, nil
	}
	var before *unstructured.Unstructured
	if !op.Creating() && w.WouldLoop(key, op.Content()) {
		before = op.Before(ctx)
	}
	out := op.Do(ctx, before)
	if out.Err != nil || out.Result == "" {
		return out.Requeue, out.Err
	}
	w.ClearConflict(key)
	w.Applied(ctx, key, out.Result, out.Msg, out.KeysAndValues...)
	if w.Wrote(ctx, key, op.Content(), out.Result == metrics.Created, out.About, before) {
		left, _ := w.Backoff(key)
		return left, nil
	}
	return out.Requeue, nil
}
