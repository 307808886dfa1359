package syncer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/breaker"
	"github.com/kubestellar/syncer/pkg/conditions"
	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/mapping"
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

// edgeReleaseSource names the edge's release object among the sources of releases (not a SyncerConfig
// name: those have no colon).
const edgeReleaseSource = "configmap:"

// releases are the release annotations the breaker considers, by source: the edge's release object
// (config DeletionRelease), taken unless the syncer wrote it; and the SyncerConfigs', taken only where
// the site lets its mailbox release (MailboxReleasesDeletions).
func (s *Syncer) releases() map[string]breaker.Release {
	out := map[string]breaker.Release{}
	if r, ok := s.edgeRelease(); ok {
		out[edgeReleaseSource+s.cfg.DeletionRelease.String()] = r
	}
	for _, obj := range s.configInformer.List("") {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if v := u.GetAnnotations()[breaker.ReleaseAnnotation]; v != "" {
				r := breaker.Release{Value: v}
				if !s.cfg.MailboxReleasesDeletions {
					r.Untrusted = fmt.Sprintf("sync target %s takes releases from its edge only: %s", s.cfg.SyncTargetName, s.releaseHow("<the count held>"))
				}
				out[u.GetName()] = r
			}
		}
	}
	return out
}

// edgeRelease is the release annotation of the edge's release object, if there is one: refused when
// the syncer wrote the object (a mailbox cannot release through a downsynced copy).
func (s *Syncer) edgeRelease() (breaker.Release, bool) {
	if s.releaseObject == nil {
		return breaker.Release{}, false
	}
	rel := s.cfg.DeletionRelease
	u, err := framework.GetFromCache(s.releaseObject, rel.Namespace, rel.Name)
	if err != nil || u == nil {
		return breaker.Release{}, false
	}
	v := u.GetAnnotations()[breaker.ReleaseAnnotation]
	if v == "" {
		return breaker.Release{}, false
	}
	r := breaker.Release{Value: v}
	if mapping.OwnedDownstream(u) || mapping.OwnerOf(u) != "" {
		r.Untrusted = "the syncer wrote this ConfigMap from a mailbox: a release is the edge owner's act"
	}
	return r, true
}

// releaseHow says how the edge owner releases the deletions held, naming count.
func (s *Syncer) releaseHow(count string) string {
	how := fmt.Sprintf("kubectl -n %s annotate --overwrite configmap %s %s=%s", s.cfg.DeletionRelease.Namespace, s.cfg.DeletionRelease.Name,
		breaker.ReleaseAnnotation, count)
	if s.cfg.DeletionRelease.Name == "" {
		how = fmt.Sprintf("name a ConfigMap at the edge with the syncer's --deletion-release-configmap, then annotate it %s=%s", breaker.ReleaseAnnotation, count)
	}
	if s.cfg.MailboxReleasesDeletions {
		how += fmt.Sprintf(", or annotate a SyncerConfig %s=%s", breaker.ReleaseAnnotation, count)
	}
	return how
}

// watchReleaseObject watches the edge's release object (nothing when none is set).
func (s *Syncer) watchReleaseObject(h cache.ResourceEventHandler) error {
	rel := s.cfg.DeletionRelease
	if rel.Name == "" || rel.Namespace == "" {
		return nil
	}
	w, err := s.down.Watch(configMaps, informermanager.Configs, informermanager.Spec{Namespaces: rel.Namespace, FieldSelector: "metadata.name=" + rel.Name}, h)
	if err != nil {
		return err
	}
	s.releaseObject = w
	return nil
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// releaseHandler lets the breaker look at the release annotations whenever the release object or a
// SyncerConfig changes; the deletions released are processed again.
func (s *Syncer) releaseHandler(ctx context.Context) cache.ResourceEventHandler {
	consider := func() {
		keys, refusals := s.deletions.Consider(s.releases())
		for _, r := range refusals {
			klog.FromContext(ctx).Info("Not releasing the held deletions: the release annotation releases nothing",
				"source", r.Source, "annotation", breaker.ReleaseAnnotation, "value", r.Value, "reason", r.Reason)
			s.releaseRefused(r)
		}
		if len(keys) == 0 {
			return
		}
		klog.FromContext(ctx).Info("Releasing the deletions the deletion breaker held", "count", len(keys))
		s.cfg.Metrics.DeletionsHeld.Set(0)
		s.downsync.Released(keys)
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
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == r.Source {
			s.cfg.Recorder.Event(u, corev1.EventTypeWarning, "ReleaseRefused", fmt.Sprintf("Sync target %s does not release the deletions it holds: %s=%q: %s (condition %s)",
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
	msg := fmt.Sprintf("Sync target %s holds every deletion at its edge: more fell due than its deletion breaker allows (%d a minute, %d an hour, and %d%% of the objects it owns there). See condition %s; the edge owner lets them go: %s.",
		s.cfg.SyncTargetName, s.cfg.DeletionBreaker.Count, s.cfg.DeletionBreaker.HourCount, s.cfg.DeletionBreaker.Percent, conditions.DeletionsHeld, s.releaseHow("<the count held>"))
	for _, obj := range s.configInformer.List("") {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			s.cfg.Recorder.Event(u, corev1.EventTypeWarning, conditions.DeletionsHeld, msg)
		}
	}
}

// watchReleases lets the breaker look at the release annotations whenever the edge's release object
// or a SyncerConfig changes. (A syncer restarted while holding needs nothing more: the same deletions
// fall due at once and are held again, unless its limits were raised above them.)
func (s *Syncer) watchReleases(ctx context.Context) error {
	if s.deletions == nil {
		return nil
	}
	h := s.releaseHandler(ctx)
	if err := s.watchReleaseObject(h); err != nil {
		return fmt.Errorf("watching the edge's release object %s: %w", s.cfg.DeletionRelease, err)
	}
	_, err := s.configInformer.AddHandler(h)
	return err
}
