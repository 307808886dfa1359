package status

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// Pauses tells which objects downsync holds paused (mapping.PausedUntilAnnotation).
type Pauses interface {
	// PausedUntil tells whether the object of key is paused now, and until when.
	PausedUntil(key framework.Key) (time.Time, bool)
	// HeldDrift is the id of the drift held for the object of key, "" when none.
	HeldDrift(key framework.Key) string
}

// PauseChanged looks at a key again whose pause started, changed or ended: its upstream object's
// per-target label (mapping.PausedLabel) is set or removed.
func (c *Controller) PauseChanged(key framework.Key) {
	c.pauseChecks.Store(key, struct{}{})
	c.queue.Add(key)
}

// paused tells whether the object of key is paused (then no status is returned), first making its
// upstream object's labels say whether it is paused (mapping.PausedLabel) and whether its drift is
// held (mapping.DriftedLabel, from the hold's note on the edge copy down), when downsync told of a
// change. wrote tells that it wrote: the write's event brings the key back.
func (c *Controller) paused(ctx context.Context, key framework.Key, r Resource, down *unstructured.Unstructured) (paused, wrote bool, err error) {
	if c.cfg.Pauses == nil {
		return false, false, nil
	}
	until, paused := c.cfg.Pauses.PausedUntil(key)
	if _, check := c.pauseChecks.Load(key); !check {
		// Before downsync has looked at the key (after a restart), the edge copy's own pause holds too.
		return paused || (down != nil && mapping.PauseOf(down).Active(c.cfg.Now())), false, nil
	}
	up, synced, err := framework.Cached(c.cfg.UpstreamInformers, r.Upstream, key.Namespace, key.Name)
	if err != nil || !synced || up == nil {
		return paused, false, err
	}
	pausedValue, drift := "", c.cfg.Pauses.HeldDrift(key)
	if paused {
		pausedValue = mapping.PauseLabelValue(until)
	}
	for _, l := range []struct{ label, want, set, removed string }{
		{c.pausedLabel, pausedValue, "paused", "resumed"},
		{c.driftedLabel, drift, "drift-held", "drift-released"},
	} {
		if have := up.GetLabels()[l.label]; l.label == "" || have == l.want {
			continue
		}
		var value interface{} // null removes it
		result := l.removed
		if l.want != "" {
			value, result = l.want, l.set
		}
		wrote, err = c.patchLabel(ctx, key, r, up, l.label, value, result)
		return paused, wrote, err
	}
	c.pauseChecks.Delete(key)
	return paused, false, nil
}
