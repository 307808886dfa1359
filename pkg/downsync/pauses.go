package downsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/selection"
)

// pauses are the keys downsync holds paused (mapping.PausedUntilAnnotation), and what it said of the
// pauses it did not honour, so that each is said once.
type pauses struct {
	mu sync.Mutex
	// held are the keys paused now, with the end of their pause.
	held map[framework.Key]time.Time
	// drifted are the keys whose drift is held, with its id.
	drifted map[framework.Key]string
	// told are the annotation values said to be malformed or past, by key and what was said of.
	told map[framework.Key]map[string]string
}

// PausedUntil tells whether downsync holds key paused, and until when (status return labels the
// upstream object with it).
func (c *Controller) PausedUntil(key framework.Key) (time.Time, bool) {
	c.pauses.mu.Lock()
	defer c.pauses.mu.Unlock()
	until, ok := c.pauses.held[key]
	return until, ok
}

// paused tells whether the key is paused now (then nothing is written for it, in any direction) and
// for how long: by its upstream object's annotation, its edge copy's (a technician at the site), or
// the SyncerConfigs that select it. Where several pause it, it resumes when the last object
// annotation's pause ends, or the first config's. A pause that starts or ends is said upstream (Event
// Paused or Resumed, and status return's per-target label); a malformed or past annotation is said
// once and pauses nothing.
func (c *Controller) paused(ctx context.Context, in *input) (time.Duration, bool) {
	key, upObj, now := in.key, in.up, in.now
	var until time.Time
	from := ""
	edgeCopy := ownedOrNil(in.down)
	if !in.selected && edgeCopy == nil {
		upObj = nil // neither selected nor at the edge: not this sync target's to pause
	}
	for _, side := range []struct {
		obj  *unstructured.Unstructured
		what string
	}{{upObj, "the upstream object"}, {edgeCopy, "the edge copy at sync target " + c.cfg.SyncTargetName}} {
		p := mapping.PauseOf(side.obj)
		switch {
		case p.Active(now):
			if p.Until.After(until) {
				until, from = p.Until, side.what
			}
		case p.Err != nil || !p.Until.IsZero():
			c.notHonoured(ctx, key, upObj, side.what, side.obj.GetAnnotations()[mapping.PausedUntilAnnotation], p.Err)
		}
	}
	configs := in.policy.PausedUntil // of the configs selecting the upstream object
	switch {
	case upObj == nil && edgeCopy != nil:
		// Gone upstream: a paused config that selects what its edge copy is still holds its deletion.
		sel := selection.ObjectOf(key.GVR.GroupResource(), in.down)
		sel.Name = key.Name // its upstream name (a conversion may rename it)
		configs = c.cfg.Selection.PolicyOf(sel, now).PausedUntil
	case !in.selected:
		configs = time.Time{}
	}
	if until.IsZero() && !configs.IsZero() {
		until, from = configs, "its SyncerConfigs"
	}
	c.pauses.mu.Lock()
	was, had := c.pauses.held[key]
	if until.IsZero() {
		delete(c.pauses.held, key)
	} else {
		c.pauses.held[key] = until
	}
	c.pauses.mu.Unlock()
	if changed := had != !until.IsZero() || !was.Equal(until); changed || (until.IsZero() && upObj != nil && c.labelledPaused(upObj)) {
		c.pauseChanged(ctx, key, upObj, edgeCopy, until, from, changed && had)
	}
	if until.IsZero() {
		return 0, false
	}
	return mapping.ResumeAfter(until, now), true
}

// pauseChanged says that a key's pause started, changed or ended (resumed): an Event on the upstream
// object, a log line, and status return told to set or remove its label.
func (c *Controller) pauseChanged(ctx context.Context, key framework.Key, upObj, edgeCopy *unstructured.Unstructured, until time.Time, from string, resumed bool) {
	logger := klog.FromContext(ctx)
	switch {
	case !until.IsZero():
		logger.Info("Paused: nothing is written for this object until the pause ends", "until", until.UTC().Format(time.RFC3339), "pausedBy", from)
		c.writes.Event(upObj, corev1.EventTypeNormal, "Paused", fmt.Sprintf("Paused at sync target %s until %s (%s on %s): nothing is written for this object, in either direction",
			c.cfg.SyncTargetName, until.UTC().Format(time.RFC3339), mapping.PausedUntilAnnotation, from))
		c.edgeEvent(edgeCopy, "Paused", fmt.Sprintf("The syncer writes nothing for this object until %s (%s on %s)",
			until.UTC().Format(time.RFC3339), mapping.PausedUntilAnnotation, from))
	case resumed:
		logger.Info("Resumed: the pause ended")
		c.writes.Event(upObj, corev1.EventTypeNormal, "Resumed", "Resumed at sync target "+c.cfg.SyncTargetName+": the pause ended")
		c.edgeEvent(edgeCopy, "Resumed", "The pause ended: the syncer writes this object again")
	}
	if c.cfg.OnPauseChanged != nil {
		c.cfg.OnPauseChanged(key)
	}
}

// edgeEvent records a Normal Event on an edge copy (nil: none) for the technician at the site.
func (c *Controller) edgeEvent(edgeCopy *unstructured.Unstructured, reason, message string) {
	if c.cfg.EdgeRecorder != nil && edgeCopy != nil && !c.cfg.ReportOnly { // report-only writes nothing at the edge
		c.cfg.EdgeRecorder.Event(edgeCopy, corev1.EventTypeNormal, reason, message)
	}
}

// labelledPaused tells whether the upstream object still carries this sync target's paused label
// (the pause ended while the syncer was not running).
func (c *Controller) labelledPaused(upObj *unstructured.Unstructured) bool {
	label := mapping.PausedLabel(c.cfg.SyncTargetName)
	_, ok := upObj.GetLabels()[label]
	return label != "" && ok
}

// notHonoured says once (per value) that an object's pause annotation pauses nothing: malformed, or
// its time past. A pause that ended while honoured is not said again (Resumed was).
func (c *Controller) notHonoured(ctx context.Context, key framework.Key, upObj *unstructured.Unstructured, what, value string, err error) {
	c.pauses.mu.Lock()
	_, held := c.pauses.held[key]
	c.pauses.mu.Unlock()
	if !c.told(key, "pause", what+value) || (err == nil && held) {
		return
	}
	if err == nil {
		err = fmt.Errorf("%s %s is in the past", mapping.PausedUntilAnnotation, value)
	}
	klog.FromContext(ctx).Info("Not paused: the pause annotation pauses nothing", "on", what, "reason", err.Error())
	c.writes.Event(upObj, corev1.EventTypeWarning, "PauseInvalid", fmt.Sprintf("Not paused at sync target %s: %v on %s", c.cfg.SyncTargetName, err, what))
}

// told records what was said of key about a subject; it tells whether it is new (to be said).
func (c *Controller) told(key framework.Key, subject, what string) bool {
	c.pauses.mu.Lock()
	defer c.pauses.mu.Unlock()
	if c.pauses.told[key][subject] == what {
		return false
	}
	if c.pauses.told[key] == nil {
		c.pauses.told[key] = map[string]string{}
	}
	c.pauses.told[key][subject] = what
	return true
}

// forget forgets what was held and said of keys that are no longer relevant.
func (p *pauses) forget(relevant func(framework.Key) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	framework.PruneKeys(p.held, relevant)
	framework.PruneKeys(p.told, relevant)
	framework.PruneKeys(p.drifted, relevant)
}

func ownedOrNil(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil || !mapping.OwnedDownstream(obj) {
		return nil
	}
	return obj
}
