package syncer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/breaker"
	"github.com/kubestellar/syncer/pkg/conditions"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/metrics"
)

// The engine's side of the deletion breaker (package breaker): what it counts, where it is released,
// what it says.

// ownedAtEdge counts the objects the syncer owns at the edge in the selected resources.
func (s *Syncer) ownedAtEdge() int {
	n := 0
	s.countObjects(func(direction, _ string, count int) {
		if direction == metrics.Downsync {
			n += count
		}
	})
	return n
}

// releases are the SyncerConfigs' release annotations, by config name.
func (s *Syncer) releases() map[string]string {
	out := map[string]string{}
	for _, obj := range s.configInformer.List("") {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if v := u.GetAnnotations()[breaker.ReleaseAnnotation]; v != "" {
				out[u.GetName()] = v
			}
		}
	}
	return out
}

// releaseHandler lets the breaker look at the release annotations whenever a SyncerConfig's change;
// the deletions released are processed again.
func (s *Syncer) releaseHandler(ctx context.Context) cache.ResourceEventHandler {
	consider := func() {
		keys, refusals := s.deletions.Consider(s.releases())
		for _, r := range refusals {
			klog.FromContext(ctx).Info("Not releasing the held deletions: the release annotation releases nothing",
				"syncerConfig", r.Config, "annotation", breaker.ReleaseAnnotation, "value", r.Value, "reason", r.Reason)
			s.releaseRefused(r)
		}
		if len(keys) == 0 {
			return
		}
		klog.FromContext(ctx).Info("Releasing the deletions the deletion breaker held", "count", len(keys))
		s.cfg.Metrics.DeletionsHeld.Set(0)
		for _, k := range keys {
			s.downsync.Queue().Add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { consider() },
		UpdateFunc: func(_, _ interface{}) { consider() },
	}
}

// releaseRefused says on a SyncerConfig why its release annotation releases nothing (a Warning Event).
func (s *Syncer) releaseRefused(r breaker.Refusal) {
	if s.cfg.Recorder == nil {
		return
	}
	for _, obj := range s.configInformer.List("") {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == r.Config {
			s.cfg.Recorder.Event(u, corev1.EventTypeWarning, "ReleaseRefused", fmt.Sprintf("Sync target %s does not release the deletions it holds: %s=%q: %s; write at least the count held (condition %s)",
				s.cfg.SyncTargetName, breaker.ReleaseAnnotation, r.Value, r.Reason, conditions.DeletionsHeld))
		}
	}
}

// deletionsHeld says upstream that the breaker started holding: a Warning Event on each SyncerConfig
// (the condition DeletionsHeld follows with the next heartbeat).
func (s *Syncer) deletionsHeld() {
	if s.cfg.Recorder == nil {
		return
	}
	msg := fmt.Sprintf("Sync target %s holds every deletion at its edge: more than %d deletions, and more than %d%% of the objects it owns there, fell due within a minute. See condition %s; annotate a SyncerConfig %s=\"<the count held>\" to let them go.",
		s.cfg.SyncTargetName, s.cfg.DeletionBreaker.Count, s.cfg.DeletionBreaker.Percent, conditions.DeletionsHeld, breaker.ReleaseAnnotation)
	for _, obj := range s.configInformer.List("") {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.cfg.Recorder.Event(u, corev1.EventTypeWarning, conditions.DeletionsHeld, msg)
		}
	}
}

// watchReleases lets the breaker look at the release annotations whenever a SyncerConfig changes.
// (A syncer restarted while holding needs nothing more: the same deletions fall due at once and are
// held again, unless its limits were raised above them.)
func (s *Syncer) watchReleases(ctx context.Context) error {
	if s.deletions == nil {
		return nil
	}
	_, err := s.configInformer.AddHandler(s.releaseHandler(ctx))
	return err
}

// drainingBypass is the breaker as downsync sees it, but for a draining engine (its workspace no
// longer bound: package mailboxes), whose deletions go ahead: unbinding is deliberate, and a
// drained workspace has no SyncerConfig left to release held deletions on.
type drainingBypass struct{ s *Syncer }

func (d drainingBypass) Allow(key framework.Key) (bool, time.Duration, bool) {
	if d.s.draining.Load() {
		return true, 0, false
	}
	return d.s.deletions.Allow(key)
}

func (d drainingBypass) Forget(key framework.Key) { d.s.deletions.Forget(key) }
