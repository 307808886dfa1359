package mailboxes

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

var namespacesGVR = wellknown.Namespaces

// edgeClient is a workspace's engine's client of the edge: it names objects as the engine does
// (upstream namespaces) and writes them where the workspace's objects live at the edge (the mapped
// namespaces, mapping.WorkspaceNamespace), marked with the workspace and the upstream namespace.
// What it reads back is named as the engine names it; lists and watches show the workspace's
// objects only.
type edgeClient struct {
	dynamic.Interface
	cluster    string
	namespaces *Namespaces
}

// EdgeClient returns the edge client of the engine of a workspace.
func EdgeClient(edge dynamic.Interface, cluster string, namespaces *Namespaces) dynamic.Interface {
	return &edgeClient{Interface: edge, cluster: cluster, namespaces: namespaces}
}

func (c *edgeClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &edgeResource{c: c, gvr: gvr, base: c.Interface.Resource(gvr),
		sc: downScope{cluster: c.cluster, namespaces: c.namespaces, isNS: gvr == namespacesGVR}}
}

type edgeResource struct {
	c         *edgeClient
	gvr       schema.GroupVersionResource
	base      dynamic.NamespaceableResourceInterface
	sc        downScope
	namespace string // the engine's (upstream) namespace; "" for all or cluster-scoped
}

func (r *edgeResource) Namespace(ns string) dynamic.ResourceInterface {
	out := *r
	out.namespace = ns
	return &out
}

// target is the edge client for the engine's namespace.
func (r *edgeResource) target() dynamic.ResourceInterface {
	if r.namespace == "" {
		return r.base
	}
	return r.base.Namespace(r.c.namespaces.ToEdge(r.c.cluster, r.namespace))
}

// edgeName is the edge name of an object the engine names name.
func (r *edgeResource) edgeName(name string) string {
	if r.sc.isNS {
		return r.c.namespaces.ToEdge(r.c.cluster, name)
	}
	return name
}

// toEdge is a copy of obj named and marked as at the edge: rename moves its namespace (a
// Namespace's name), the downsync mark and a Namespace's name label; the workspace's marks are added
// to what downsync marked.
func (r *edgeResource) toEdge(obj *unstructured.Unstructured) *unstructured.Unstructured {
	ns, name := obj.GetNamespace(), obj.GetName()
	edgeNS, edgeName, upstreamNS := "", name, ns
	switch {
	case r.sc.isNS:
		edgeName, upstreamNS = r.c.namespaces.ToEdge(r.c.cluster, name), name
	case ns != "":
		edgeNS = r.c.namespaces.ToEdge(r.c.cluster, ns)
	}
	out := rename(obj, edgeNS, edgeName).DeepCopy()
	if a := out.GetAnnotations(); a[mapping.DownsyncedAnnotation] != "" {
		a[mapping.ClusterAnnotation] = r.c.cluster
		if upstreamNS != "" {
			a[mapping.UpstreamNamespaceAnnotation] = upstreamNS
		}
		out.SetAnnotations(a)
	}
	return out
}

// nameLabel is the label an apiserver sets on every Namespace to its name.
const nameLabel = "kubernetes.io/metadata.name"

// fromEdge names an object read from the edge as the engine does.
func (r *edgeResource) fromEdge(obj *unstructured.Unstructured, err error) (*unstructured.Unstructured, error) {
	if err != nil || obj == nil {
		return obj, err
	}
	return r.sc.ToEngine(obj), nil
}

func (r *edgeResource) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().Create(ctx, r.toEdge(obj), opts, sub...))
}

func (r *edgeResource) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, sub ...string) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().Update(ctx, r.toEdge(obj), opts, sub...))
}

func (r *edgeResource) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().UpdateStatus(ctx, r.toEdge(obj), opts))
}

func (r *edgeResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	return r.target().Delete(ctx, r.edgeName(name), opts, sub...)
}

// DeleteCollection is refused: at the edge it would reach the edge's own objects and, without a
// namespace, other workspaces' (the engine deletes one owned object at a time).
func (r *edgeResource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return fmt.Errorf("mailboxes: DeleteCollection of %s is not served to a workspace's engine", r.gvr.GroupResource())
}

func (r *edgeResource) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().Get(ctx, r.edgeName(name), opts, sub...))
}

// List lists the workspace's objects: up to opts.Limit of them when set (as many pages of the edge's
// list as it takes to find them, other workspaces' objects being skipped), without a continue token.
func (r *edgeResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	want := opts.Limit
	if want > 0 {
		opts.Limit = max(want, 500)
	}
	var out *unstructured.UnstructuredList
	for {
		list, err := r.target().List(ctx, opts)
		if err != nil {
			return list, err
		}
		if out == nil {
			out = &unstructured.UnstructuredList{Object: list.Object}
		}
		for i := range list.Items {
			if r.sc.Matches(&list.Items[i]) {
				out.Items = append(out.Items, *r.sc.ToEngine(&list.Items[i]))
			}
		}
		opts.Continue = list.GetContinue()
		if opts.Continue == "" || (want > 0 && int64(len(out.Items)) >= want) {
			break
		}
	}
	if want > 0 && int64(len(out.Items)) > want {
		out.Items = out.Items[:want]
	}
	out.SetContinue("")
	return out, nil
}

// Watch watches the workspace's objects.
func (r *edgeResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := r.target().Watch(ctx, opts)
	if err != nil {
		return w, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok || e.Type == watch.Error || u.GetKind() == "Status" {
			return e, true // bookmarks, errors
		}
		if e.Type != watch.Bookmark && !r.sc.Matches(u) {
			return e, false
		}
		e.Object = r.sc.ToEngine(u)
		return e, true
	}), nil
}

func (r *edgeResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().Patch(ctx, r.edgeName(name), pt, data, opts, sub...))
}

func (r *edgeResource) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, sub ...string) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().Apply(ctx, r.edgeName(name), r.toEdge(obj), opts, sub...))
}

func (r *edgeResource) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return r.fromEdge(r.target().ApplyStatus(ctx, r.edgeName(name), r.toEdge(obj), opts))
}
