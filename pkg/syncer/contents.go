package syncer

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
)

// contents lists what the edge holds in a Namespace, or of a CRD's resource, read live with the
// syncer's own identity (downsync.Contents): downsync deletes such a container only when nothing it
// did not write is left in it.
type contents struct{ s *Syncer }

// contentsPage is how many objects a list of contents asks for at once.
const contentsPage = 500

// notContents are resources whose objects a namespace's deletion takes that are records, not
// contents anyone would miss.
var notContents = sets.New(
	schema.GroupResource{Resource: "events"},
	schema.GroupResource{Group: "events.k8s.io", Resource: "events"},
)

func (c contents) InNamespace(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	groups, lists, err := c.s.cfg.DownstreamDiscovery.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the edge's resources: %w", err)
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	var out []*unstructured.Unstructured
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || preferred[gv.Group] != gv.Version {
			continue
		}
		for _, r := range l.APIResources {
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			if !r.Namespaced || strings.Contains(r.Name, "/") || notContents.Has(gr) || !sets.New(r.Verbs...).Has("list") {
				continue
			}
			items, err := listAll(ctx, c.s.cfg.DownstreamDynamic.Resource(gv.WithResource(r.Name)).Namespace(namespace))
			if err != nil {
				return nil, fmt.Errorf("listing %s in namespace %s: %w", gr, namespace, err)
			}
			out = append(out, items...)
		}
	}
	return out, nil
}

func (c contents) OfResource(ctx context.Context, gr schema.GroupResource) ([]*unstructured.Unstructured, error) {
	groups, err := c.s.cfg.DownstreamDiscovery.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("discovering the edge's API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != gr.Group {
			continue
		}
		items, err := listAll(ctx, c.s.cfg.DownstreamDynamic.Resource(gr.WithVersion(g.PreferredVersion.Version)))
		if apierrors.IsNotFound(err) {
			return nil, nil // not served in that version: none to lose
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gr, err)
		}
		return items, nil
	}
	return nil, nil // not served
}

// listAll lists every object of a resource, a page at a time.
func listAll(ctx context.Context, client dynamic.ResourceInterface) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	opts := metav1.ListOptions{Limit: contentsPage}
	for {
		l, err := client.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}
