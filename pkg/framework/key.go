package framework

import (
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Key identifies one object of one resource: the item of every queue. Controllers choose which
// side's version the GVR names so that events from both sides for one object meet in one key.
// Each workspace's engine has queues of its own, so a key needs no logical cluster.
type Key struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

// String names the object as kubectl would: "configmaps demo/greeting", "deployments.apps demo/web",
// "namespaces demo".
func (k Key) String() string {
	s := k.GVR.GroupResource().String() + " "
	if k.Namespace != "" {
		s += k.Namespace + "/"
	}
	return s + k.Name
}

// ObjectName is "namespace/name", or "name" for a cluster-scoped object.
func (k Key) ObjectName() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// PruneKeys deletes from m the keys for which keep is false: what every Prune of state kept per key
// does.
func PruneKeys[V any](m map[Key]V, keep func(Key) bool) {
	maps.DeleteFunc(m, func(k Key, _ V) bool { return !keep(k) })
}
