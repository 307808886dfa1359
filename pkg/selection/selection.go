package selection

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/problem"
)

// NamespacesResource is the core Namespace resource, selected implicitly by namespaced entries.
var NamespacesResource = schema.GroupResource{Resource: "namespaces"}

const wildcard = edgev1.Wildcard

// Selection is the union of all SyncerConfigs. It is immutable once built.
type Selection struct {
	rules map[schema.GroupResource]*rule
	// statusRules select the objects whose status is returned: those of the configs that did not
	// switch status return off.
	statusRules map[schema.GroupResource]*rule
	// deleteRules select the objects whose edge copies are deleted with them: those of the configs
	// that did not set propagateDeletion to false.
	deleteRules map[schema.GroupResource]*rule
	requests    []Request
	upsync      []upsyncEntry
	// namespaces are the namespaces the configs name (not "*"), with the entries that name them.
	namespaces map[string][]Origin
}

// NamedNamespaces are the namespaces the configs name, with the entries that name each.
func (s *Selection) NamedNamespaces() map[string][]Origin {
	if s == nil {
		return nil
	}
	return s.namespaces
}

// upsyncEntry is one spec.upsync[] entry and where it comes from.
type upsyncEntry struct {
	edgev1.UpsyncSet
	origin Origin
}

// Origin is where a request comes from: a config and the field in it.
type Origin struct {
	// ConfigKind is the kind of the config: problem.EdgeSyncConfig, or problem.SyncerConfig (also when
	// empty).
	ConfigKind string
	Config     string
	Field      string
}

// Problem is a problem found at the origin.
func (o Origin) Problem(kind problem.Kind, gr schema.GroupResource, reason string) problem.Problem {
	return problem.Problem{Kind: kind, ConfigKind: o.ConfigKind, Config: o.Config, Field: o.Field, Resource: gr, Reason: reason}
}

// Request is one resource named by a config, before resolution against discovery.
type Request struct {
	Group    string
	Resource string // a plural resource name, or "*"
	Version  string // may be empty
	// Namespaced tells which part of the config named it: namespaceScope and namespacedObjects name
	// namespaced resources, clusterScope cluster-scoped ones.
	Namespaced bool
	// Origins are the config entries that name it (several configs may name one resource).
	Origins []Origin
}

// problem makes a problem of the request, for each config entry that names it.
func (r Request) problems(kind problem.Kind, gr schema.GroupResource, reason string) []problem.Problem {
	out := make([]problem.Problem, 0, len(r.Origins))
	for _, o := range r.Origins {
		out = append(out, o.Problem(kind, gr, reason))
	}
	return out
}

// rule is what the merged configs select of one GroupResource (or of every resource of a group, for
// resource "*"). Namespaced and cluster-scoped parts are kept apart; which one applies follows from
// whether the object has a namespace.
type rule struct {
	allNamespaces bool                        // namespaceScope namespaces "*"
	namespaces    sets.Set[string]            // namespaceScope: every object in these namespaces
	objects       map[string]sets.Set[string] // namespacedObjects: namespace (or "*") -> names (may hold "*")
	clusterAll    bool
	clusterNames  sets.Set[string]
}

func newRule() *rule {
	return &rule{namespaces: sets.New[string](), objects: map[string]sets.Set[string]{}, clusterNames: sets.New[string]()}
}

func (r *rule) matches(namespace, name string) bool {
	if namespace == "" {
		return r.clusterAll || r.clusterNames.Has(name)
	}
	if r.allNamespaces || r.namespaces.Has(namespace) {
		return true
	}
	for _, ns := range []string{namespace, wildcard} {
		if names, ok := r.objects[ns]; ok && (names.Has(wildcard) || names.Has(name)) {
			return true
		}
	}
	return false
}

// namesExplicitly tells whether the rule names the object itself — by its name in namespacedObjects
// or clusterScope — rather than selecting it through a wildcard or a whole namespace.
func (r *rule) namesExplicitly(namespace, name string) bool {
	if namespace == "" {
		return r.clusterNames.Has(name)
	}
	for _, ns := range []string{namespace, wildcard} {
		if names, ok := r.objects[ns]; ok && names.Has(name) {
			return true
		}
	}
	return false
}

// Merge builds the Selection from every SyncerConfig and EdgeSyncConfig (each read as
// FromEdgeSyncConfig converts it): one union. Entries with no resource name are reported as problems
// and skipped; the rest still counts.
func Merge(configs []*edgev1.SyncerConfig, edgeConfigs ...*edgev1.EdgeSyncConfig) (*Selection, []problem.Problem) {
	sources := make([]source, 0, len(configs)+len(edgeConfigs))
	for _, cfg := range configs {
		sources = append(sources, source{kind: problem.SyncerConfig, cfg: cfg})
	}
	var problems []problem.Problem
	for _, esc := range edgeConfigs {
		cfg, fields, ps := FromEdgeSyncConfig(esc)
		sources = append(sources, source{kind: problem.EdgeSyncConfig, cfg: cfg, fields: fields})
		problems = append(problems, ps...)
	}
	s, mergeProblems := merge(sources)
	s.statusRules = subsetRules(s, sources, (*edgev1.SyncerConfigSpec).ReturnsStatus)
	s.deleteRules = subsetRules(s, sources, (*edgev1.SyncerConfigSpec).PropagatesDeletion)
	return s, append(problems, mergeProblems...)
}

// source is one config as merge reads it: a SyncerConfig, or an EdgeSyncConfig in SyncerConfig form.
type source struct {
	kind string // problem.SyncerConfig or problem.EdgeSyncConfig
	cfg  *edgev1.SyncerConfig
	// fields names the entries of a converted EdgeSyncConfig as the EdgeSyncConfig does; nil for a
	// SyncerConfig.
	fields map[string]string
}

// origin is the Origin of a field of the config, named as the user wrote it.
func (src source) origin(field string) Origin {
	if f, ok := src.fields[field]; ok {
		field = f
	}
	return Origin{ConfigKind: src.kind, Config: src.cfg.Name, Field: field}
}

// subsetRules are the rules of the configs whose spec has the property: a union, like the whole.
func subsetRules(s *Selection, sources []source, has func(*edgev1.SyncerConfigSpec) bool) map[schema.GroupResource]*rule {
	var subset []source
	for _, src := range sources {
		if has(&src.cfg.Spec) {
			subset = append(subset, src)
		}
	}
	if len(subset) == len(sources) {
		return s.rules
	}
	r, _ := merge(subset)
	return r.rules
}

func merge(sources []source) (*Selection, []problem.Problem) {
	m := &merger{s: &Selection{rules: map[schema.GroupResource]*rule{}}, seen: map[requestKey]int{}}
	m.nsRule = m.s.rule(NamespacesResource)
	sorted := append([]source(nil), sources...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return a.cfg.Name < b.cfg.Name || (a.cfg.Name == b.cfg.Name && a.kind < b.kind)
	})
	for _, src := range sorted {
		spec := src.cfg.Spec
		if src.kind == problem.SyncerConfig && len(spec.NamespaceScope.Resources) == 0 && len(spec.NamespacedObjects) == 0 &&
			len(spec.ClusterScope) == 0 && len(spec.Upsync) == 0 {
			m.problems = append(m.problems, problem.Problem{Kind: problem.EmptyConfig, ConfigKind: src.kind, Config: src.cfg.Name,
				Reason: "selects nothing: no namespaceScope resources, namespacedObjects, clusterScope or upsync entries"})
		}
		m.namespaceScope(src, spec.NamespaceScope)
		m.namespacedObjects(src, spec.NamespacedObjects)
		m.clusterScope(src, spec.ClusterScope)
		for i, u := range spec.Upsync {
			m.s.upsync = append(m.s.upsync, upsyncEntry{UpsyncSet: u, origin: src.origin(fmt.Sprintf("upsync[%d]", i))})
		}
	}
	if m.nsRule.clusterAll || m.nsRule.clusterNames.Len() > 0 {
		m.request(Request{Resource: NamespacesResource.Resource, Version: "v1", Namespaced: false}, Origin{Field: "namespaces of the selected objects"})
	} else {
		delete(m.s.rules, NamespacesResource)
	}
	return m.s, m.problems
}

// merger accumulates configs into a Selection.
type merger struct {
	s        *Selection
	nsRule   *rule // the Namespace objects the namespaced entries imply
	seen     map[requestKey]int
	problems []problem.Problem
}

type requestKey struct {
	group, resource, version string
	namespaced               bool
}

func (m *merger) invalid(o Origin, reason string) {
	m.problems = append(m.problems, o.Problem(problem.InvalidConfig, schema.GroupResource{}, reason))
}

// request records that a config entry names a resource; one request per resource and version, with
// every entry that names it.
func (m *merger) request(r Request, o Origin) {
	key := requestKey{r.Group, r.Resource, r.Version, r.Namespaced}
	if i, ok := m.seen[key]; ok {
		m.s.requests[i].Origins = append(m.s.requests[i].Origins, o)
		return
	}
	m.seen[key] = len(m.s.requests)
	r.Origins = []Origin{o}
	m.s.requests = append(m.s.requests, r)
}

// namespace selects a Namespace object (or all, for "*"), named by a config entry.
func (m *merger) namespace(ns string, o Origin) {
	if ns == wildcard {
		m.nsRule.clusterAll = true
		return
	}
	m.nsRule.clusterNames.Insert(ns)
	if m.s.namespaces == nil {
		m.s.namespaces = map[string][]Origin{}
	}
	m.s.namespaces[ns] = append(m.s.namespaces[ns], o)
}

func (m *merger) namespaceScope(src source, scope edgev1.NamespaceScopeDownsyncs) {
	for i, res := range scope.Resources {
		origin := src.origin(fmt.Sprintf("namespaceScope.resources[%d]", i))
		if res.Resource == "" {
			m.invalid(origin, "resource is empty")
			continue
		}
		r := m.s.rule(schema.GroupResource{Group: res.Group, Resource: res.Resource})
		for _, ns := range scope.Namespaces {
			if ns == wildcard {
				r.allNamespaces = true
			} else {
				r.namespaces.Insert(ns)
			}
		}
		m.request(Request{Group: res.Group, Resource: res.Resource, Version: res.APIVersion, Namespaced: true}, origin)
	}
	// The Namespace objects named by namespaceScope are downsynced themselves.
	for _, ns := range scope.Namespaces {
		m.namespace(ns, src.origin("namespaceScope.namespaces"))
	}
}

func (m *merger) namespacedObjects(src source, entries []edgev1.NamespaceScopeDownsyncObjects) {
	for i, obj := range entries {
		origin := src.origin(fmt.Sprintf("namespacedObjects[%d]", i))
		if obj.Resource == "" {
			m.invalid(origin, "resource is empty")
			continue
		}
		r := m.s.rule(schema.GroupResource{Group: obj.Group, Resource: obj.Resource})
		for _, byNS := range obj.ObjectsByNamespace {
			if byNS.Namespace == "" {
				m.invalid(origin, "objectsByNamespace entry without namespace")
				continue
			}
			if len(byNS.Names) == 0 {
				continue // an empty list selects nothing, not even the Namespace
			}
			names, ok := r.objects[byNS.Namespace]
			if !ok {
				names = sets.New[string]()
				r.objects[byNS.Namespace] = names
			}
			names.Insert(byNS.Names...)
			m.namespace(byNS.Namespace, origin)
		}
		m.request(Request{Group: obj.Group, Resource: obj.Resource, Version: obj.APIVersion, Namespaced: true}, origin)
	}
}

func (m *merger) clusterScope(src source, entries []edgev1.ClusterScopeDownsyncResource) {
	for i, cs := range entries {
		origin := src.origin(fmt.Sprintf("clusterScope[%d]", i))
		if cs.Resource == "" {
			m.invalid(origin, "resource is empty")
			continue
		}
		r := m.s.rule(schema.GroupResource{Group: cs.Group, Resource: cs.Resource})
		if cs.Objects == nil { // omitted means all, as in release-0.14
			r.clusterAll = true
		}
		for _, name := range cs.Objects {
			if name == wildcard {
				r.clusterAll = true
			} else {
				r.clusterNames.Insert(name)
			}
		}
		m.request(Request{Group: cs.Group, Resource: cs.Resource, Version: cs.APIVersion, Namespaced: false}, origin)
	}
}

func (s *Selection) rule(gr schema.GroupResource) *rule {
	r, ok := s.rules[gr]
	if !ok {
		r = newRule()
		s.rules[gr] = r
	}
	return r
}

// Requests lists the resources the configs name, in a stable order.
func (s *Selection) Requests() []Request { return s.requests }

// Mentions tells whether any config names the resource, directly or through "*" in its group.
func (s *Selection) Mentions(gr schema.GroupResource) bool {
	if s == nil {
		return false
	}
	_, direct := s.rules[gr]
	_, any := s.rules[schema.GroupResource{Group: gr.Group, Resource: wildcard}]
	return direct || any
}

// Matches tells whether the object of the given resource, namespace ("" for cluster-scoped) and name
// is selected for downsync. It needs no discovery.
func (s *Selection) Matches(gr schema.GroupResource, namespace, name string) bool {
	return s != nil && matchRules(s.rules, gr, namespace, name)
}

func matchRules(rules map[schema.GroupResource]*rule, gr schema.GroupResource, namespace, name string) bool {
	if r, ok := rules[gr]; ok && r.matches(namespace, name) {
		return true
	}
	if gr == NamespacesResource {
		return false
	}
	if r, ok := rules[schema.GroupResource{Group: gr.Group, Resource: wildcard}]; ok && r.matches(namespace, name) {
		return true
	}
	return false
}

// NamesExplicitly tells whether a config names the object itself (in namespacedObjects or
// clusterScope), not only through "*" or a whole namespace. Objects apiservers make themselves (see
// mapping.SystemObject) are downsynced only when named so.
func (s *Selection) NamesExplicitly(gr schema.GroupResource, namespace, name string) bool {
	if s == nil {
		return false
	}
	for _, key := range []schema.GroupResource{gr, {Group: gr.Group, Resource: wildcard}} {
		if r, ok := s.rules[key]; ok && r.namesExplicitly(namespace, name) {
			return true
		}
	}
	return false
}

// ReturnsStatus tells whether the status of a downsynced object is to be written back upstream.
func (s *Selection) ReturnsStatus(gr schema.GroupResource, namespace, name string) bool {
	return s != nil && matchRules(s.statusRules, gr, namespace, name)
}

// PropagatesDeletion tells whether the edge copy of a downsynced object is deleted when the object
// is deleted upstream or leaves the selection (no config selecting it set propagateDeletion false).
func (s *Selection) PropagatesDeletion(gr schema.GroupResource, namespace, name string) bool {
	return s == nil || matchRules(s.deleteRules, gr, namespace, name)
}

// Equal tells whether two selections select the same objects. Config names and entry order do not
// matter.
func (s *Selection) Equal(o *Selection) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.fingerprint() == o.fingerprint()
}

func (s *Selection) fingerprint() string {
	var b strings.Builder
	writeRules(&b, s.rules)
	b.WriteString("status:")
	writeRules(&b, s.statusRules)
	b.WriteString("delete:")
	writeRules(&b, s.deleteRules)
	for _, r := range s.requests {
		fmt.Fprintf(&b, "%s/%s/%s/%v;", r.Group, r.Version, r.Resource, r.Namespaced)
	}
	for _, u := range s.upsync {
		fmt.Fprintf(&b, "%v", u.UpsyncSet)
	}
	return b.String()
}

func writeRules(b *strings.Builder, rules map[schema.GroupResource]*rule) {
	grs := make([]schema.GroupResource, 0, len(rules))
	for gr := range rules {
		grs = append(grs, gr)
	}
	sort.Slice(grs, func(i, j int) bool { return grs[i].String() < grs[j].String() })
	for _, gr := range grs {
		r := rules[gr]
		fmt.Fprintf(b, "%s|%v|%v|%v|%v|", gr, r.allNamespaces, sets.List(r.namespaces), r.clusterAll, sets.List(r.clusterNames))
		nss := make([]string, 0, len(r.objects))
		for ns := range r.objects {
			nss = append(nss, ns)
		}
		sort.Strings(nss)
		for _, ns := range nss {
			fmt.Fprintf(b, "%s=%v,", ns, sets.List(r.objects[ns]))
		}
		b.WriteString(";")
	}
}
