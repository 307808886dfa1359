package mailboxes

import (
	"sync"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	kcpcache "github.com/kcp-dev/apimachinery/v2/pkg/cache"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// upScope is a workspace's part of an upstream hub informer: the objects of its logical cluster
// (annotation kcp.io/cluster), as they are.
type upScope struct{ cluster logicalcluster.Name }

func (s upScope) Matches(obj *unstructured.Unstructured) bool {
	return logicalcluster.From(obj) == s.cluster
}

func (s upScope) ToEngine(obj *unstructured.Unstructured) *unstructured.Unstructured { return obj }

func (s upScope) StoreKey(namespace, name string) string {
	return kcpcache.ToClusterAwareKey(s.cluster.String(), namespace, name)
}

func (s upScope) Candidates(idx cache.Indexer, inNamespace bool, ns string) ([]interface{}, error) {
	if inNamespace {
		return idx.ByIndex(kcpcache.ClusterAndNamespaceIndexName, kcpcache.ClusterAndNamespaceIndexKey(s.cluster, ns))
	}
	return idx.ByIndex(kcpcache.ClusterIndexName, kcpcache.ClusterIndexKey(s.cluster))
}

// wholeScope sees every object of an informer as it is (the edge's CRDs, which concern every workspace).
type wholeScope struct{}

func (wholeScope) Matches(*unstructured.Unstructured) bool { return true }

func (wholeScope) ToEngine(obj *unstructured.Unstructured) *unstructured.Unstructured { return obj }

func (wholeScope) StoreKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func (wholeScope) Candidates(idx cache.Indexer, inNamespace bool, ns string) ([]interface{}, error) {
	if inNamespace {
		return idx.ByIndex(cache.NamespaceIndex, ns)
	}
	return idx.List(), nil
}

// origin is where an edge namespace comes from: a namespace of a workspace.
type origin struct {
	cluster   string
	namespace string
}

// Namespaces knows which workspace namespace every edge namespace of this syncer maps from: those it
// maps itself (mapping.WorkspaceNamespace), and those it reads from the edge's Namespaces (their
// marks), so that objects in them are known after a restart too.
type Namespaces struct {
	mu        sync.RWMutex
	byEdge    map[string]origin
	byCluster map[string]map[string]bool // the edge namespaces of each workspace
}

// NewNamespaces returns an empty map of edge namespaces.
func NewNamespaces() *Namespaces {
	return &Namespaces{byEdge: map[string]origin{}, byCluster: map[string]map[string]bool{}}
}

// add records an edge namespace's origin unless one is recorded; n.mu is held.
func (n *Namespaces) add(edge string, o origin) {
	if _, taken := n.byEdge[edge]; taken {
		return
	}
	n.byEdge[edge] = o
	if n.byCluster[o.cluster] == nil {
		n.byCluster[o.cluster] = map[string]bool{}
	}
	n.byCluster[o.cluster][edge] = true
}

// Of lists the edge namespaces known to map from a workspace.
func (n *Namespaces) Of(cluster string) []string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]string, 0, len(n.byCluster[cluster]))
	for edge := range n.byCluster[cluster] {
		out = append(out, edge)
	}
	return out
}

// ToEdge is the edge namespace of a workspace's namespace; it is remembered.
func (n *Namespaces) ToEdge(cluster, namespace string) string {
	edge := mapping.WorkspaceNamespace(cluster, namespace)
	n.mu.RLock()
	o, ok := n.byEdge[edge]
	n.mu.RUnlock()
	if !ok || o != (origin{cluster, namespace}) {
		n.mu.Lock()
		n.add(edge, origin{cluster, namespace})
		n.mu.Unlock()
	}
	return edge
}

// Origin is the workspace and namespace an edge namespace maps from.
func (n *Namespaces) Origin(edge string) (cluster, namespace string, ok bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	o, ok := n.byEdge[edge]
	return o.cluster, o.namespace, ok
}

// Observe learns an edge Namespace's origin from its marks (mapping.ClusterAnnotation and
// mapping.UpstreamNamespaceAnnotation); the edge's own namespaces have none.
func (n *Namespaces) Observe(ns *unstructured.Unstructured) {
	a := ns.GetAnnotations()
	cluster, upstream := a[mapping.ClusterAnnotation], a[mapping.UpstreamNamespaceAnnotation]
	if cluster == "" || upstream == "" || mapping.WorkspaceNamespace(cluster, upstream) != ns.GetName() {
		return // not one of ours, or its marks were changed by hand
	}
	n.mu.Lock()
	n.add(ns.GetName(), origin{cluster, upstream})
	n.mu.Unlock()
}

// downScope is a workspace's part of an edge hub informer: the objects the engine wrote for it (their
// mark mapping.ClusterAnnotation), and the edge's own objects in the namespaces mapped from it (for
// upsync), with their namespaces (and a Namespace's name) turned back into the upstream ones.
type downScope struct {
	cluster    string
	namespaces *Namespaces
	isNS       bool // the informer is of Namespaces: their names map
}

func (s downScope) Matches(obj *unstructured.Unstructured) bool {
	if c := mapping.ClusterOf(obj); c != "" {
		return c == s.cluster
	}
	ns := obj.GetNamespace()
	if s.isNS {
		ns = obj.GetName()
	}
	if ns == "" {
		return false // the edge's own cluster-scoped object: no workspace's
	}
	c, _, ok := s.namespaces.Origin(ns)
	return ok && c == s.cluster
}

func (s downScope) upstreamNamespace(edge string) string {
	if _, ns, ok := s.namespaces.Origin(edge); ok {
		return ns
	}
	return edge
}

func (s downScope) ToEngine(obj *unstructured.Unstructured) *unstructured.Unstructured {
	switch {
	case s.isNS:
		up := obj.GetAnnotations()[mapping.UpstreamNamespaceAnnotation]
		if up == "" {
			up = s.upstreamNamespace(obj.GetName())
		}
		return rename(obj, "", up)
	case obj.GetNamespace() != "":
		up := obj.GetAnnotations()[mapping.UpstreamNamespaceAnnotation]
		if up == "" {
			up = s.upstreamNamespace(obj.GetNamespace())
		}
		return rename(obj, up, obj.GetName())
	}
	return obj
}

func (s downScope) StoreKey(namespace, name string) string {
	switch {
	case s.isNS:
		return s.namespaces.ToEdge(s.cluster, name)
	case namespace != "":
		return s.namespaces.ToEdge(s.cluster, namespace) + "/" + name
	}
	return name
}

// Candidates are, without a namespace, the objects marked for the workspace (WorkspaceIndex) and the
// edge's own ones in the namespaces mapped from it: not every object at the edge.
func (s downScope) Candidates(idx cache.Indexer, inNamespace bool, ns string) ([]interface{}, error) {
	if inNamespace {
		return idx.ByIndex(cache.NamespaceIndex, s.namespaces.ToEdge(s.cluster, ns))
	}
	out, err := idx.ByIndex(WorkspaceIndex, s.cluster)
	if err != nil {
		return nil, err
	}
	for _, edge := range s.namespaces.Of(s.cluster) {
		var objs []interface{}
		if s.isNS {
			if obj, ok, _ := idx.GetByKey(edge); ok {
				objs = []interface{}{obj}
			}
		} else if objs, err = idx.ByIndex(cache.NamespaceIndex, edge); err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if u, ok := obj.(*unstructured.Unstructured); ok && mapping.ClusterOf(u) == "" {
				out = append(out, obj) // the edge's own: marked ones were listed above
			}
		}
	}
	return out, nil
}

// WorkspaceIndex indexes edge objects by the workspace marked on them (mapping.ClusterAnnotation).
const WorkspaceIndex = "workspace"

func workspaceIndexFunc(obj interface{}) ([]string, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if c := mapping.ClusterOf(u); c != "" {
			return []string{c}, nil
		}
	}
	return nil, nil
}

// rename returns a copy of obj under another namespace and name, its downsync mark (which names the
// object itself) following: the copy shares everything else with obj, which must not be modified.
func rename(obj *unstructured.Unstructured, namespace, name string) *unstructured.Unstructured {
	if obj.GetNamespace() == namespace && obj.GetName() == name {
		return obj
	}
	out := &unstructured.Unstructured{Object: make(map[string]interface{}, len(obj.Object))}
	for k, v := range obj.Object {
		out.Object[k] = v
	}
	meta, _ := obj.Object["metadata"].(map[string]interface{})
	newMeta := make(map[string]interface{}, len(meta)+1)
	for k, v := range meta {
		newMeta[k] = v
	}
	out.Object["metadata"] = newMeta
	if namespace == "" {
		delete(newMeta, "namespace")
	} else {
		newMeta["namespace"] = namespace
	}
	newMeta["name"] = name
	if labels, ok := meta["labels"].(map[string]interface{}); ok && obj.GetKind() == "Namespace" {
		if _, ok := labels[nameLabel]; ok {
			// The apiserver's label naming a Namespace follows its name.
			newLabels := make(map[string]interface{}, len(labels))
			for k, v := range labels {
				newLabels[k] = v
			}
			newLabels[nameLabel] = name
			newMeta["labels"] = newLabels
		}
	}
	if ann, ok := meta["annotations"].(map[string]interface{}); ok {
		if mark, ok := ann[mapping.DownsyncedAnnotation].(string); ok && mark == mapping.Mark(obj.GetKind(), obj.GetNamespace(), obj.GetName()) {
			newAnn := make(map[string]interface{}, len(ann))
			for k, v := range ann {
				newAnn[k] = v
			}
			newAnn[mapping.DownsyncedAnnotation] = mapping.Mark(obj.GetKind(), namespace, name)
			newMeta["annotations"] = newAnn
		}
	}
	return out
}
