package warnings

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

var (
	podKind        = schema.GroupKind{Kind: "Pod"}
	replicaSetKind = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
)

// root is the object the syncer wrote that o is, or that controls o through at most maxOwnerHops
// controllers (a Pod, its ReplicaSet, their Deployment), with its resource.
func (c *Controller) root(o ref) (Resource, ref, bool) {
	for hop := 0; hop <= maxOwnerHops; hop++ {
		if r, ok := c.cfg.Selection.ByKind(o.gk); ok {
			u, synced, err := framework.Cached(c.cfg.DownstreamInformers, r.Downstream, o.namespace, o.name)
			if err == nil && synced && u != nil && mapping.OwnedDownstream(u) {
				return r, o, true
			}
			// Not the syncer's (a Pod of a ReplicaSet where Pods are downsynced too): its controller may be.
		}
		var descendants framework.Cache
		switch o.gk {
		case podKind:
			descendants = c.cfg.Pods
		case replicaSetKind:
			descendants = c.cfg.ReplicaSets
		default:
			return Resource{}, ref{}, false
		}
		u, err := framework.GetFromCache(descendants, o.namespace, o.name)
		if err != nil || u == nil {
			return Resource{}, ref{}, false
		}
		owner, ok := controllerOf(u)
		if !ok {
			return Resource{}, ref{}, false
		}
		o = owner
	}
	return Resource{}, ref{}, false
}

// controllerOf is u's controlling owner (in u's namespace).
func controllerOf(u *unstructured.Unstructured) (ref, bool) {
	for _, o := range u.GetOwnerReferences() {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return ref{}, false
		}
		return ref{gk: schema.GroupKind{Group: gv.Group, Kind: o.Kind}, namespace: u.GetNamespace(), name: o.Name}, true
	}
	return ref{}, false
}

// waitingReasons are the reasons a container waits that are worth telling upstream.
var waitingReasons = map[string]bool{
	"CrashLoopBackOff": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// oomKilled is the reason of a container the kernel killed for want of memory.
const oomKilled = "OOMKilled"

// containerWarnings are what a Pod's containers newly say: a container that started waiting for one
// of waitingReasons, or was OOM-killed since old (nil: the Pod is new to the cache).
func containerWarnings(old, pod *unstructured.Unstructured) []warning {
	before := map[string]containerState{}
	if old != nil {
		for _, s := range containerStates(old) {
			before[s.name] = s
		}
	}
	about := ref{gk: podKind, namespace: pod.GetNamespace(), name: pod.GetName()}
	var out []warning
	for _, s := range containerStates(pod) {
		prev, known := before[s.name]
		if s.waiting != "" && waitingReasons[s.waiting] && (!known || prev.waiting != s.waiting) {
			detail := "container " + s.name + " is waiting"
			if s.message != "" {
				detail += ": " + s.message
			}
			out = append(out, warning{about: about, reason: s.waiting, detail: detail})
		}
		if s.terminated == oomKilled && (!known || s.restarts > prev.restarts || prev.terminated != oomKilled) {
			out = append(out, warning{about: about, reason: oomKilled,
				detail: "container " + s.name + " was killed for want of memory (OOMKilled)"})
		}
	}
	return out
}

// containerState is what one container status says.
type containerState struct {
	name, waiting, message, terminated string
	restarts                           int64
}

// containerStates reads a Pod's init and app container statuses.
func containerStates(pod *unstructured.Unstructured) []containerState {
	var out []containerState
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		list, _, _ := unstructured.NestedSlice(pod.Object, "status", field)
		for _, item := range list {
			m, ok := item.(map[string]interface{})
			if !ok {
				continue
			}
			var s containerState
			s.name, _, _ = unstructured.NestedString(m, "name")
			s.waiting, _, _ = unstructured.NestedString(m, "state", "waiting", "reason")
			s.message, _, _ = unstructured.NestedString(m, "state", "waiting", "message")
			s.terminated, _, _ = unstructured.NestedString(m, "lastState", "terminated", "reason")
			if t, ok, _ := unstructured.NestedString(m, "state", "terminated", "reason"); ok {
				s.terminated = t
			}
			s.restarts, _, _ = unstructured.NestedInt64(m, "restartCount")
			out = append(out, s)
		}
	}
	return out
}
