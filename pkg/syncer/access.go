package syncer

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/logging"
)

var selfSubjectAccessReviewGVR = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// maxNamespaces is how many namespaces an upstream resource may be watched in one by one.
func (s *Syncer) maxNamespaces() int {
	if s.cfg.MaxNamespaceInformers > 0 {
		return s.cfg.MaxNamespaceInformers
	}
	return informermanager.DefaultMaxNamespaces
}

// mayListClusterWide tells the upstream informer manager whether the syncer may list and watch a
// resource cluster-wide, as the resolver last reviewed it (never, unless reviewed).
func (s *Syncer) mayListClusterWide(gvr schema.GroupVersionResource) bool {
	v, ok := s.clusterWide.Load(gvr)
	return ok && v.(bool)
}

// reviewClusterWide asks the upstream apiserver whether the syncer may list and watch gvr in every
// namespace (SelfSubjectAccessReviews), and remembers the answer for mayListClusterWide. A syncer
// granted only some namespaces (a shared upstream) is told no, and an apiserver that cannot say is
// taken for a no: the resource is then watched namespace by namespace.
func (s *Syncer) reviewClusterWide(ctx context.Context, gvr schema.GroupVersionResource) {
	allowed := true
	for _, verb := range []string{"list", "watch"} {
		review := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
			"spec": map[string]interface{}{"resourceAttributes": map[string]interface{}{
				"group": gvr.Group, "version": gvr.Version, "resource": gvr.Resource, "verb": verb}},
		}}
		out, err := s.cfg.UpstreamDynamic.Resource(selfSubjectAccessReviewGVR).Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			klog.FromContext(ctx).V(logging.Skip).Info("Cannot review whether the syncer may list a resource cluster-wide; watching it namespace by namespace",
				"gvr", gvr.String(), "err", err.Error())
			allowed = false
			break
		}
		if ok, _, _ := unstructured.NestedBool(out.Object, "status", "allowed"); !ok {
			allowed = false
			break
		}
	}
	if was, known := s.clusterWide.Swap(gvr, allowed); !known || was.(bool) != allowed {
		klog.FromContext(ctx).Info("Reviewed whether the syncer may list and watch a resource selected in many namespaces cluster-wide",
			"gvr", gvr.String(), "clusterWide", allowed, "maxNamespaceInformers", s.maxNamespaces())
	}
}
