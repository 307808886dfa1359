package selection

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
)

// APIResource is one resource served by an apiserver at one version.
type APIResource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Verbs      sets.Set[string]
	// HasStatus tells whether the resource serves a status subresource.
	HasStatus bool
}

// Index is what one side's discovery serves, by GroupResource and version.
type Index struct {
	byGR      map[schema.GroupResource]map[string]APIResource
	preferred map[string]string // group -> preferred version
	byGroup   map[string][]APIResource
}

// NewIndex builds an Index from discovery: the groups (for preferred versions) and the resource lists
// of every group version. Subresources ("deployments/status") are left out.
func NewIndex(groups []*metav1.APIGroup, lists []*metav1.APIResourceList) *Index {
	idx := &Index{byGR: map[schema.GroupResource]map[string]APIResource{}, preferred: map[string]string{}, byGroup: map[string][]APIResource{}}
	for _, g := range groups {
		if g != nil {
			idx.preferred[g.Name] = g.PreferredVersion.Version
		}
	}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		withStatus := sets.New[string]()
		for _, r := range list.APIResources {
			if parent, sub, ok := strings.Cut(r.Name, "/"); ok && sub == "status" {
				withStatus.Insert(parent)
			}
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			res := APIResource{GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Verbs: sets.New[string](r.Verbs...),
				HasStatus: withStatus.Has(r.Name)}
			gr := res.GVR.GroupResource()
			if idx.byGR[gr] == nil {
				idx.byGR[gr] = map[string]APIResource{}
			}
			idx.byGR[gr][gv.Version] = res
			idx.byGroup[gv.Group] = append(idx.byGroup[gv.Group], res)
		}
	}
	return idx
}

// Lookup finds a resource at the wanted version, or at the group's preferred version, or at any
// served version (lowest sorted, for stability) when the wanted one is not served.
func (idx *Index) Lookup(gr schema.GroupResource, version string) (APIResource, bool) {
	if idx == nil {
		return APIResource{}, false
	}
	versions := idx.byGR[gr]
	if len(versions) == 0 {
		return APIResource{}, false
	}
	if r, ok := versions[version]; ok && version != "" {
		return r, true
	}
	if r, ok := versions[idx.preferred[gr.Group]]; ok {
		return r, true
	}
	all := make([]string, 0, len(versions))
	for v := range versions {
		all = append(all, v)
	}
	sort.Strings(all)
	return versions[all[0]], true
}

// LookupKind finds the resource serving a group, version and kind.
func (idx *Index) LookupKind(gvk schema.GroupVersionKind) (APIResource, bool) {
	if idx == nil {
		return APIResource{}, false
	}
	for _, r := range idx.byGroup[gvk.Group] {
		if r.GVR.Version == gvk.Version && r.Kind == gvk.Kind {
			return r, true
		}
	}
	return APIResource{}, false
}

// GVK is the resource's group, version and kind.
func (r APIResource) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

func (idx *Index) servesGroupVersion(group, version string) bool {
	for _, r := range idx.byGroup[group] {
		if r.GVR.Version == version {
			return true
		}
	}
	return false
}

// All lists every served resource at its group's preferred version (or its only version).
func (idx *Index) All() []APIResource {
	var out []APIResource
	for gr := range idx.byGR {
		if r, ok := idx.Lookup(gr, ""); ok {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVR.String() < out[j].GVR.String() })
	return out
}

// syncable are the verbs a resource needs to be watched and written by the syncer.
var syncable = []string{"list", "watch", "get", "create", "patch", "delete"}

// Syncable tells whether the syncer can watch and write the resource.
func (r APIResource) Syncable() bool { return r.Verbs.HasAll(syncable...) }

// Resource is a selected resource resolved against both sides' discovery.
type Resource struct {
	// Upstream is where objects are read; Downstream where they are written. Downstream.GVR is empty
	// while the edge does not serve the resource yet (a CRD not yet established, say).
	Upstream   APIResource
	Downstream APIResource
	// Rename, when a conversion applies, renames the objects between the sides; nil otherwise.
	Rename *mapping.Rename
}

// ServedDownstream tells whether the edge serves the resource.
func (r *Resource) ServedDownstream() bool { return !r.Downstream.GVR.Empty() }

// Resolve expands the selection's requests against upstream discovery ("*" into every matching
// resource of the group) and pairs each resource with the version the edge serves. Requests that
// name no served resource, or a resource of the wrong scope, are returned as problems; the rest is
// resolved regardless.
func Resolve(sel *Selection, up, down *Index) (map[schema.GroupResource]*Resource, []problem.Problem) {
	out := map[schema.GroupResource]*Resource{}
	var problems []problem.Problem
	for _, req := range sel.Requests() {
		var found []APIResource
		if req.Resource == wildcard {
			found, problems = up.expandWildcard(req, problems)
		} else if r, ok, more := up.resolveNamed(req); ok {
			found, problems = []APIResource{r}, append(problems, more...)
		} else {
			problems = append(problems, more...)
		}
		for _, r := range found {
			if _, ok := out[r.GVR.GroupResource()]; !ok {
				res, more := pair(sel, req, r, down)
				out[r.GVR.GroupResource()], problems = res, append(problems, more...)
			}
		}
	}
	return out, problems
}

// pair pairs an upstream resource with what the edge serves: the same version (the object is
// applied with its upstream apiVersion), or, under a conversion, the natural form once served.
func pair(sel *Selection, req Request, r APIResource, down *Index) (*Resource, []problem.Problem) {
	gr := r.GVR.GroupResource()
	res := &Resource{Upstream: r, Rename: sel.Conversions().For(r.GVK())}
	if res.Rename != nil && res.Rename.Down != res.Rename.Up {
		if d, ok := down.LookupKind(res.Rename.Down); ok {
			res.Downstream = d
		}
		return res, nil
	}
	if d, ok := down.byGR[gr][r.GVR.Version]; ok {
		res.Downstream = d
		return res, nil
	}
	if len(down.byGR[gr]) > 0 {
		return res, req.problems(problem.NotServedDownstream, gr, fmt.Sprintf("resource %q is served downstream, but not at version %s", gr, r.GVR.Version))
	}
	return res, nil
}

// expandWildcard is every syncable resource of a "*" request's group and scope, at the version asked
// for, or at the group's preferred one when that is not served (a warning).
func (idx *Index) expandWildcard(req Request, problems []problem.Problem) ([]APIResource, []problem.Problem) {
	version := req.Version
	if !idx.servesGroupVersion(req.Group, version) {
		version = idx.preferred[req.Group]
		if req.Version != "" && version != "" {
			problems = append(problems, req.problems(problem.VersionFallback, schema.GroupResource{Group: req.Group, Resource: wildcard},
				fmt.Sprintf("group %q is not served upstream at version %s; using %s", req.Group, req.Version, version))...)
		}
	}
	var out []APIResource
	for _, r := range idx.byGroup[req.Group] {
		if r.Namespaced == req.Namespaced && r.Syncable() && (version == "" || r.GVR.Version == version) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		problems = append(problems, req.problems(problem.UnknownResource, schema.GroupResource{Group: req.Group, Resource: wildcard},
			fmt.Sprintf("no %s resources served upstream in group %q version %q", scopeWord(req.Namespaced), req.Group, req.Version))...)
	}
	return out, problems
}

// resolveNamed is the served resource a request names (by resource or kind), if it can be synced
// as asked; problems say why not, or (a version fallback) what was used instead.
func (idx *Index) resolveNamed(req Request) (APIResource, bool, []problem.Problem) {
	gr := schema.GroupResource{Group: req.Group, Resource: req.Resource}
	if req.Resource == "" {
		var ok bool
		if gr, ok = idx.resourceOfKind(req.Group, req.Kind); !ok {
			return APIResource{}, false, req.problems(problem.UnknownResource, schema.GroupResource{Group: req.Group, Resource: req.Kind},
				fmt.Sprintf("kind %q is not served upstream in group %q (yet)%s", req.Kind, req.Group, idx.kindHint(req.Group, req.Kind)))
		}
	}
	r, ok := idx.Lookup(gr, req.Version)
	switch {
	case !ok:
		return r, false, req.problems(problem.UnknownResource, gr, idx.notServed(gr))
	case req.Kind != "" && r.Kind != req.Kind:
		return r, false, req.problems(problem.InvalidConfig, gr,
			fmt.Sprintf("kind %q and resource %q disagree: the objects of %q are of kind %q", req.Kind, gr.Resource, gr.String(), r.Kind))
	case r.Namespaced != req.Namespaced:
		return r, false, req.problems(problem.WrongScope, gr,
			fmt.Sprintf("resource %q is %s, but is listed with %s resources", gr.String(), scopeWord(r.Namespaced), scopeWord(req.Namespaced)))
	case !r.Syncable():
		return r, false, req.problems(problem.NotSyncable, gr, fmt.Sprintf("resource %q does not support all of %v", gr.String(), syncable))
	case req.Version != "" && r.GVR.Version != req.Version:
		return r, true, req.problems(problem.VersionFallback, gr,
			fmt.Sprintf("resource %q is not served upstream at version %s; using %s", gr.String(), req.Version, r.GVR.Version))
	}
	return r, true, nil
}

// notServed says why a resource is not served: a name that is another resource's kind or singular
// gets the plural to use; otherwise the API is missing (yet) upstream, and its objects wait.
func (idx *Index) notServed(gr schema.GroupResource) string {
	for _, r := range idx.byGroup[gr.Group] {
		if strings.EqualFold(r.Kind, gr.Resource) || r.GVR.Resource == gr.Resource+"s" || r.GVR.Resource == gr.Resource+"es" {
			return fmt.Sprintf("resource %q is not served upstream; did you mean %q (resources are named by their plural)?", gr.String(), r.GVR.Resource)
		}
	}
	return fmt.Sprintf("resource %q is not served upstream (yet): no CRD or APIBinding provides it there; its objects wait until one does", gr.String())
}

// resourceOfKind finds the resource whose objects are of the kind in the group (the first by name,
// should several be).
func (idx *Index) resourceOfKind(group, kind string) (schema.GroupResource, bool) {
	var found []string
	for _, r := range idx.byGroup[group] {
		if r.Kind == kind {
			found = append(found, r.GVR.Resource)
		}
	}
	if len(found) == 0 {
		return schema.GroupResource{}, false
	}
	sort.Strings(found)
	return schema.GroupResource{Group: group, Resource: found[0]}, true
}

// kindHint is a suggestion for a kind nothing in the group serves: the kind meant, when the name
// given is a resource's plural or differs from its kind only in case.
func (idx *Index) kindHint(group, kind string) string {
	for _, r := range idx.byGroup[group] {
		if strings.EqualFold(r.Kind, kind) || r.GVR.Resource == kind {
			return fmt.Sprintf("; did you mean kind %q (kinds are singular and CamelCase)?", r.Kind)
		}
	}
	return ""
}

func scopeWord(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}
