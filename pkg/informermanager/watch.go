package informermanager

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
)

// WatchKind says what an informer Watch runs is for.
type WatchKind int

const (
	// Configs are objects read whole (decoded), with the Spec's label selector: the SyncerConfigs
	// and EdgeSyncConfigs upstream.
	Configs WatchKind = iota
	// APIs are objects that bring APIs (CRDs, kcp's APIBindings), watched only to notice APIs
	// appearing, changing and going: the cache keeps names, generations and status conditions (and
	// an APIBinding's phase and bound resources), not schemas.
	APIs
	// Signals are edge objects watched for what they say of the workloads the syncer wrote (Warning
	// Events, Pods, ReplicaSets, HorizontalPodAutoscalers): the cache keeps names, owners and what
	// is used (an Event's reason, message, involved object and times; a Pod's container states; an
	// autoscaler's target), compacted.
	Signals
)

// Watched is an informer Watch runs.
type Watched struct {
	framework.Cache
	denied func() error
}

// Denied is the last list or watch the apiserver refused, until one succeeds again.
func (w *Watched) Denied() error { return w.denied() }

// watchedEntry is one informer Watch runs: a part of the manager's own, or a Source's share.
type watchedEntry struct {
	part   *part
	shared Shared
	cache  framework.Cache
	reg    framework.Registration
}

// Watch runs an informer of gvr for the engine's own needs, apart from the selected resources (Set),
// with h as its event handler: from Start on (at once after Start), until Stop. With a Source it is
// a share of the source's. The Handlers are not told of it.
func (m *Manager) Watch(gvr schema.GroupVersionResource, kind WatchKind, spec Spec, h cache.ResourceEventHandler) (*Watched, error) {
	w := &watchedEntry{}
	switch {
	case m.source != nil && kind == APIs:
		w.shared = m.source.APIs(gvr)
	case m.source != nil:
		spec.Signals = kind == Signals
		w.shared = m.source.Objects(gvr, spec)
	}
	out := &Watched{}
	if w.shared != nil {
		w.cache, out.denied = w.shared.Cache(), w.shared.Denied
	} else {
		transform := transformFor(spec, false)
		switch kind {
		case APIs:
			transform = slimAPIObject
		case Signals:
			spec.Signals = true
			transform = transformFor(spec, true)
		}
		w.part = m.newPart(gvr, spec, "", nil, nil, transform)
		w.part.informer.onSynced = nil
		w.cache, out.denied = w.part.informer, w.part.health.Denied
	}
	out.Cache = w.cache
	if h != nil {
		reg, err := w.cache.AddHandler(h)
		if err != nil {
			if w.shared != nil {
				w.shared.Release()
			}
			return nil, err
		}
		w.reg = reg
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		w.stop()
		return out, nil
	}
	m.watched = append(m.watched, w)
	if m.ctx != nil && w.part != nil {
		m.start(w.part)
	}
	return out, nil
}

// stop removes the handler and stops the informer, or gives the share back.
func (w *watchedEntry) stop() {
	if w.reg != nil {
		_ = w.cache.RemoveHandler(w.reg)
	}
	if w.part != nil {
		w.part.stop()
	}
	if w.shared != nil {
		w.shared.Release()
	}
}

// slimAPIObject keeps of an object that brings APIs what tells that they appeared, changed or went.
func slimAPIObject(obj interface{}) (interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	slim.SetName(u.GetName())
	slim.SetResourceVersion(u.GetResourceVersion())
	slim.SetGeneration(u.GetGeneration())
	if a := u.GetAnnotations(); len(a) > 0 {
		slim.SetAnnotations(a) // kcp's logical cluster
	}
	for _, field := range []string{"conditions", "phase", "boundResources"} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "status", field); ok {
			_ = unstructured.SetNestedField(slim.Object, runtime.DeepCopyJSONValue(v), "status", field)
		}
	}
	return slim, nil
}

// signalFields are the fields of a Signals object kept beside its name and owners: an Event's, a
// Pod's container states, a HorizontalPodAutoscaler's target.
var signalFields = [][]string{
	{"type"}, {"reason"}, {"message"}, {"involvedObject"}, {"count"}, {"lastTimestamp"}, {"eventTime"},
	{"series", "lastObservedTime"}, {"status", "containerStatuses"}, {"status", "initContainerStatuses"},
	{"spec", "scaleTargetRef"},
}

// slimSignal keeps of an edge Event, Pod, ReplicaSet or HorizontalPodAutoscaler its name, owners and signalFields; an object
// it made is kept as it is.
func slimSignal(u *unstructured.Unstructured) *unstructured.Unstructured {
	slim := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
	slim.SetName(u.GetName())
	slim.SetNamespace(u.GetNamespace())
	slim.SetUID(u.GetUID())
	slim.SetResourceVersion(u.GetResourceVersion())
	if owners, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "ownerReferences"); ok {
		_ = unstructured.SetNestedField(slim.Object, runtime.DeepCopyJSONValue(owners), "metadata", "ownerReferences")
	}
	for _, path := range signalFields {
		if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...); ok {
			_ = unstructured.SetNestedField(slim.Object, runtime.DeepCopyJSONValue(v), path...)
		}
	}
	return slim
}
