package selection

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/problem"
)

// crdResource is never upsynced: the API of an upsynced object must already exist upstream.
var crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

func listHas(list []string, v string) bool {
	return slices.Contains(list, wildcard) || slices.Contains(list, v)
}

// UpsyncMatches tells whether an edge object is selected for upsync by any upsync entry: its group
// is the entry's apiGroup, its resource is listed, its namespace is listed (cluster-scoped objects
// have none) and its name is listed. "*" matches anything; an empty list matches nothing.
func (s *Selection) UpsyncMatches(gr schema.GroupResource, namespace, name string) bool {
	if s == nil {
		return false
	}
	for _, u := range s.upsync {
		if (u.APIGroup == gr.Group || u.APIGroup == wildcard) && listHas(u.Resources, gr.Resource) &&
			(namespace == "" || listHas(u.Namespaces, namespace)) && listHas(u.Names, name) {
			return true
		}
	}
	return false
}

// UpsyncNamesExplicitly tells whether an upsync entry that selects the edge object lists its name
// itself, not only "*". Objects apiservers make themselves (see mapping.SystemObject) are upsynced
// only when named so.
func (s *Selection) UpsyncNamesExplicitly(gr schema.GroupResource, namespace, name string) bool {
	if s == nil {
		return false
	}
	for _, u := range s.upsync {
		if (u.APIGroup == gr.Group || u.APIGroup == wildcard) && listHas(u.Resources, gr.Resource) &&
			(namespace == "" || listHas(u.Namespaces, namespace)) && slices.Contains(u.Names, name) {
			return true
		}
	}
	return false
}

// UpsyncMentions tells whether any upsync entry could select objects of the resource.
func (s *Selection) UpsyncMentions(gr schema.GroupResource) bool {
	if s == nil {
		return false
	}
	for _, u := range s.upsync {
		if (u.APIGroup == gr.Group || u.APIGroup == wildcard) && listHas(u.Resources, gr.Resource) {
			return true
		}
	}
	return false
}

// ResolveUpsync expands the upsync entries against the edge's discovery (the objects' source) and
// pairs each resource with the same version upstream, where copies are written. A resource that is
// not served upstream at that version is a problem (upsyncing CRDs is out of scope: the API must
// exist upstream); so is a named resource the edge does not serve. The rest resolves regardless.
func ResolveUpsync(sel *Selection, up, down *Index) (map[schema.GroupResource]*Resource, []problem.Problem) {
	out := map[schema.GroupResource]*Resource{}
	var problems []problem.Problem
	if sel == nil {
		return out, nil
	}
	report := func(origin Origin, kind problem.Kind, gr schema.GroupResource, reason string) {
		problems = append(problems, origin.Problem(kind, gr, reason))
	}
	add := func(origin Origin, d APIResource) {
		gr := d.GVR.GroupResource()
		if _, ok := out[gr]; ok {
			return
		}
		u, ok := up.byGR[gr][d.GVR.Version]
		if !ok {
			report(origin, problem.NotServedUpstream, gr, fmt.Sprintf("%s (%s) is served at the edge but not upstream; its objects are not upsynced until the API exists upstream",
				gr.String(), d.GVR.Version))
			return
		}
		out[gr] = &Resource{Upstream: u, Downstream: d}
	}
	for _, u := range sel.upsync {
		origin := u.origin
		for _, res := range u.Resources {
			if res == wildcard {
				for _, d := range down.All() {
					gr := d.GVR.GroupResource()
					if (u.APIGroup == wildcard || gr.Group == u.APIGroup) && d.Syncable() && gr != crdResource && gr != NamespacesResource {
						add(origin, d)
					}
				}
				continue
			}
			groups := []string{u.APIGroup}
			if u.APIGroup == wildcard {
				groups = nil
				for _, d := range down.All() {
					if d.GVR.Resource == res {
						groups = append(groups, d.GVR.Group)
					}
				}
			}
			found := false
			for _, g := range groups {
				gr := schema.GroupResource{Group: g, Resource: res}
				if gr == crdResource {
					report(origin, problem.Unsupported, gr, "upsyncing CustomResourceDefinitions is not supported; create the API upstream")
					found = true
					continue
				}
				d, ok := down.Lookup(gr, "")
				if !ok {
					continue
				}
				found = true
				if !d.Syncable() {
					report(origin, problem.NotSyncable, gr, fmt.Sprintf("resource %q does not support all of %v", gr.String(), syncable))
					continue
				}
				add(origin, d)
			}
			if !found {
				report(origin, problem.UnknownResource, schema.GroupResource{Group: u.APIGroup, Resource: res}, fmt.Sprintf("resource %q is not served at the edge", res))
			}
		}
	}
	return out, problems
}
