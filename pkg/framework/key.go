package framework

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Key identifies one object of one resource: the item of every queue. Controllers choose which
// side's version the GVR names so that events from both sides for one object meet in one key.
// Cluster is the logical cluster (kcp workspace) the object lives in upstream; empty when the
// syncer serves one workspace.
type Key struct {
	Cluster   string
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

// String names the object as kubectl would: "configmaps demo/greeting", "deployments.apps demo/web",
// "namespaces demo"; a logical cluster comes before the namespace, kcp-style: "configmaps root:ws|demo/x".
func (k Key) String() string {
	s := k.GVR.GroupResource().String() + " "
	if k.Cluster != "" {
		s += k.Cluster + "|"
	}
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
