package autoscale

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
)

// HorizontalPodAutoscalers is the resource of the edge's autoscalers: autoscaling/v2, served since
// Kubernetes 1.23.
var HorizontalPodAutoscalers = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}

// Target is an object an autoscaler scales: its group, kind, namespace and name at the edge.
type Target struct {
	GroupKind schema.GroupKind
	Namespace string
	Name      string
}

// Index holds the targets of the edge's HorizontalPodAutoscalers. Safe for concurrent use.
type Index struct {
	// onChange is told each target that got its first autoscaler or lost its last one.
	onChange func(Target)
	// known: the autoscalers are listed (or cannot be, and never will be known).
	known atomic.Bool

	mu sync.RWMutex
	// scalers are the autoscalers (by name) of each target.
	scalers map[Target]sets.Set[string]
	// targets is the target of each autoscaler, by namespace/name.
	targets map[string]Target
}

// NewIndex returns an empty index; onChange (may be nil) is told each target that gets its first
// autoscaler or loses its last one, from the informer's handler.
func NewIndex(onChange func(Target)) *Index {
	return &Index{onChange: onChange, scalers: map[Target]sets.Set[string]{}, targets: map[string]Target{}}
}

// Scales tells whether an autoscaler at the edge scales the object; known is false until the
// autoscalers are listed (Known).
func (x *Index) Scales(gk schema.GroupKind, namespace, name string) (scales, known bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.scalers[Target{GroupKind: gk, Namespace: namespace, Name: name}].Len() > 0, x.known.Load()
}

// Known says that the index holds every autoscaler at the edge, or all it ever will (they cannot be
// listed): Scales answers from now on.
func (x *Index) Known() { x.known.Store(true) }

// Handler keeps the index as the edge's HorizontalPodAutoscalers come, change and go.
func (x *Index) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { x.set(framework.ObjectOf(obj), false) },
		UpdateFunc: func(_, obj interface{}) { x.set(framework.ObjectOf(obj), false) },
		DeleteFunc: func(obj interface{}) { x.set(framework.ObjectOf(obj), true) },
	}
}

// set records the target of an autoscaler (none, when gone) and tells onChange of the targets that
// gained their first autoscaler or lost their last.
func (x *Index) set(hpa *unstructured.Unstructured, gone bool) {
	if hpa == nil {
		return
	}
	id := hpa.GetNamespace() + "/" + hpa.GetName()
	now, ok := targetOf(hpa)
	x.mu.Lock()
	var changed []Target
	if old, had := x.targets[id]; had && (gone || !ok || old != now) {
		delete(x.targets, id)
		x.scalers[old].Delete(id)
		if x.scalers[old].Len() == 0 {
			delete(x.scalers, old)
			changed = append(changed, old)
		}
	}
	if !gone && ok && x.targets[id] != now {
		x.targets[id] = now
		if x.scalers[now] == nil {
			x.scalers[now] = sets.New[string]()
			changed = append(changed, now)
		}
		x.scalers[now].Insert(id)
	}
	x.mu.Unlock()
	if x.onChange != nil {
		for _, t := range changed {
			x.onChange(t)
		}
	}
}

// targetOf is the object an autoscaler scales (spec.scaleTargetRef, in its namespace).
func targetOf(hpa *unstructured.Unstructured) (Target, bool) {
	ref, _, _ := unstructured.NestedStringMap(hpa.Object, "spec", "scaleTargetRef")
	gv, err := schema.ParseGroupVersion(ref["apiVersion"])
	if err != nil || ref["kind"] == "" || ref["name"] == "" {
		return Target{}, false
	}
	return Target{GroupKind: schema.GroupKind{Group: gv.Group, Kind: ref["kind"]}, Namespace: hpa.GetNamespace(), Name: ref["name"]}, true
}
