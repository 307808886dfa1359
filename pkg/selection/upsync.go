package selection

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// crdResource is never upsynced: the API of an upsynced object must already exist upstream.
var crdResource = wellknown.CRDs.GroupResource()

func listHas(list []string, v string) bool {
	return slices.Contains(list, wildcard) || slices.Contains(list, v)
}

// names tells whether the entry names objects of the resource, by the resource or by the kind of
// its objects ("" when unknown).
func (u *upsyncEntry) names(gr schema.GroupResource, kind string) bool {
	return (u.APIGroup == gr.Group || u.APIGroup == wildcard) &&
		(listHas(u.Resources, gr.Resource) || (kind != "" && listHas(u.Kinds, kind)))
}

// selects tells whether the entry selects the object; explicitly, whether it must list its name
// itself, not only "*".
func (u *upsyncEntry) selects(o Object, explicitly bool) bool {
	named := listHas(u.Names, o.Name)
	if explicitly {
		named = slices.Contains(u.Names, o.Name)
	}
	return u.names(o.Resource, o.Kind) && (o.Namespace == "" || listHas(u.Namespaces, o.Namespace)) && named && u.filter.matches(o)
}

// UpsyncMatches tells whether an edge object is selected for upsync by any upsync entry: its group
// is the entry's apiGroup, its resource or kind is listed, its namespace is listed (cluster-scoped
// objects have none), its name is listed and its labels and annotations match the entry's
// selectors. "*" matches anything; an empty list matches nothing.
func (s *Selection) UpsyncMatches(o Object) bool {
	if s == nil {
		return false
	}
	for i := range s.upsync {
		if s.upsync[i].selects(o, false) {
			return true
		}
	}
	return false
}

// UpsyncNamesExplicitly tells whether an upsync entry that selects the edge object lists its name
// itself, not only "*". Objects apiservers make themselves (see mapping.SystemObject) are upsynced
// only when named so.
func (s *Selection) UpsyncNamesExplicitly(o Object) bool {
	if s == nil {
		return false
	}
	for i := range s.upsync {
		if s.upsync[i].selects(o, true) {
			return true
		}
	}
	return false
}

// UpsyncMentions tells whether any upsync entry could select objects of the resource, whose objects
// are of the kind ("" when unknown).
func (s *Selection) UpsyncMentions(gr schema.GroupResource, kind string) bool {
	if s == nil {
		return false
	}
	for i := range s.upsync {
		if s.upsync[i].names(gr, kind) {
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
		if upGVK := sel.Conversions().Up(d.GVK()); upGVK != d.GVK() {
			// A conversion: copies go up in the denatured form.
			u, ok := up.LookupKind(upGVK)
			if !ok {
				report(origin, problem.NotServedUpstream, gr, fmt.Sprintf("%s (%s) is upsynced as %s, which is not served upstream; its objects are not upsynced until the API exists upstream",
					gr.String(), d.GVR.Version, upGVK))
				return
			}
			out[gr] = &Resource{Upstream: u, Downstream: d, Rename: sel.Conversions().For(upGVK)}
			return
		}
		u, ok := up.byGR[gr][d.GVR.Version]
		if !ok {
			report(origin, problem.NotServedUpstream, gr, fmt.Sprintf("%s (%s) is served at the edge but not upstream; its objects are not upsynced until the API exists upstream",
				gr.String(), d.GVR.Version))
			return
		}
		out[gr] = &Resource{Upstream: u, Downstream: d, Rename: sel.Conversions().For(u.GVK())}
	}
	for _, u := range sel.upsync {
		origin := u.origin
		resources := u.Resources
		if slices.Contains(u.Kinds, wildcard) {
			resources = append(slices.Clip(resources), wildcard) // every kind: every resource
		}
		for _, res := range resources {
			if res == wildcard {
				for _, d := range down.All() {
					gr := d.GVR.GroupResource()
					if (u.APIGroup == wildcard || gr.Group == u.APIGroup) && d.Syncable() && gr != crdResource && gr != NamespacesResource {
						add(origin, d)
					}
				}
				continue
			}
			var candidates []schema.GroupResource
			for _, g := range upsyncGroups(u.APIGroup, down, func(d APIResource) bool { return d.GVR.Resource == res }) {
				candidates = append(candidates, schema.GroupResource{Group: g, Resource: res})
			}
			if !resolveNamed(origin, candidates, down, add, report) {
				report(origin, problem.UnknownResource, schema.GroupResource{Group: u.APIGroup, Resource: res}, fmt.Sprintf("resource %q is not served at the edge", res))
			}
		}
		for _, kind := range u.Kinds {
			if kind == wildcard {
				continue
			}
			var candidates []schema.GroupResource
			for _, d := range down.All() {
				if (u.APIGroup == wildcard || d.GVR.Group == u.APIGroup) && d.Kind == kind {
					candidates = append(candidates, d.GVR.GroupResource())
				}
			}
			if !resolveNamed(origin, candidates, down, add, report) {
				report(origin, problem.UnknownResource, schema.GroupResource{Group: u.APIGroup, Resource: kind},
					fmt.Sprintf("kind %q is not served at the edge in group %q%s", kind, u.APIGroup, down.kindHint(u.APIGroup, kind)))
			}
		}
	}
	return out, problems
}

// upsyncGroups are the groups an upsync entry's apiGroup stands for: itself, or for "*" the groups
// of the edge resources that pass the test.
func upsyncGroups(group string, down *Index, test func(APIResource) bool) []string {
	if group != wildcard {
		return []string{group}
	}
	var groups []string
	for _, d := range down.All() {
		if test(d) {
			groups = append(groups, d.GVR.Group)
		}
	}
	return groups
}

// resolveNamed resolves the resources an upsync entry names against the edge's discovery, and tells
// whether any of them is served there.
func resolveNamed(origin Origin, candidates []schema.GroupResource, down *Index, add func(Origin, APIResource),
	report func(Origin, problem.Kind, schema.GroupResource, string)) bool {
	found := false
	for _, gr := range candidates {
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
	return found
}
