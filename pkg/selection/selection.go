package selection

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
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
	// conversions rename objects between the sides (denatured upstream, natural at the edge).
	conversions *mapping.Conversions
}

// Conversions are the merged conversion rules of the configs.
func (s *Selection) Conversions() *mapping.Conversions {
	if s == nil {
		return nil
	}
	return s.conversions
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
	Config string
	Field  string
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
		out = append(out, problem.Problem{Kind: kind, Config: o.Config, Field: o.Field, Resource: gr, Reason: reason})
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

// Merge builds the Selection from every SyncerConfig. Entries with no resource name are reported as
// problems and skipped; the rest still counts.
func Merge(configs []*edgev1.SyncerConfig) (*Selection, []problem.Problem) {
	s, problems := merge(configs)
	s.conversions, problems = mergeConversions(configs, problems)
	s.statusRules = subsetRules(s, configs, (*edgev1.SyncerConfigSpec).ReturnsStatus)
	s.deleteRules = subsetRules(s, configs, (*edgev1.SyncerConfigSpec).PropagatesDeletion)
	return s, problems
}

// mergeConversions merges every config's conversions; rules that do not apply are problems of the
// configs they come from.
func mergeConversions(configs []*edgev1.SyncerConfig, problems []problem.Problem) (*mapping.Conversions, []problem.Problem) {
	form := func(r edgev1.EdgeSyncConfigResource) mapping.Form {
		name := r.Name
		if name == wildcard {
			name = "" // every object of the kind
		}
		return mapping.Form{Group: r.Group, Version: r.Version, Kind: r.Kind, Name: name}
	}
	var rules []mapping.ConversionRule
	for _, cfg := range configs {
		for i, c := range cfg.Spec.Conversions {
			rules = append(rules, mapping.ConversionRule{Up: form(c.Upstream), Down: form(c.Downstream), Config: cfg.Name, Field: fmt.Sprintf("conversions[%d]", i)})
		}
	}
	conversions, errs := mapping.NewConversions(rules)
	for _, e := range errs {
		problems = append(problems, problem.Problem{Kind: problem.InvalidConfig, Config: e.Config, Field: e.Field, Reason: e.Reason})
	}
	return conversions, problems
}

// subsetRules are the rules of the configs whose spec has the property: a union, like the whole.
func subsetRules(s *Selection, configs []*edgev1.SyncerConfig, has func(*edgev1.SyncerConfigSpec) bool) map[schema.GroupResource]*rule {
	var subset []*edgev1.SyncerConfig
	for _, cfg := range configs {
		if has(&cfg.Spec) {
			subset = append(subset, cfg)
		}
	}
	if len(subset) == len(configs) {
		return s.rules
	}
	r, _ := merge(subset)
	return r.rules
}

func merge(configs []*edgev1.SyncerConfig) (*Selection, []problem.Problem) {
	m := &merger{s: &Selection{rules: map[schema.GroupResource]*rule{}}, seen: map[requestKey]int{}}
	m.nsRule = m.s.rule(NamespacesResource)
	sorted := append([]*edgev1.SyncerConfig(nil), configs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, cfg := range sorted {
		spec := cfg.Spec
		if len(spec.NamespaceScope.Resources) == 0 && len(spec.NamespacedObjects) == 0 && len(spec.ClusterScope) == 0 && len(spec.Upsync) == 0 &&
			len(spec.Conversions) == 0 {
			m.problems = append(m.problems, problem.Problem{Kind: problem.EmptyConfig, Config: cfg.Name,
				Reason: "selects nothing: no namespaceScope resources, namespacedObjects, clusterScope or upsync entries"})
		}
		m.namespaceScope(cfg.Name, cfg.Spec.NamespaceScope)
		m.namespacedObjects(cfg.Name, cfg.Spec.NamespacedObjects)
		m.clusterScope(cfg.Name, cfg.Spec.ClusterScope)
		for i, u := range cfg.Spec.Upsync {
			m.s.upsync = append(m.s.upsync, upsyncEntry{UpsyncSet: u, origin: Origin{cfg.Name, fmt.Sprintf("upsync[%d]", i)}})
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
	m.problems = append(m.problems, problem.Problem{Kind: problem.InvalidConfig, Config: o.Config, Field: o.Field, Reason: reason})
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

func (m *merger) namespaceScope(config string, scope edgev1.NamespaceScopeDownsyncs) {
	for i, res := range scope.Resources {
		origin := Origin{config, fmt.Sprintf("namespaceScope.resources[%d]", i)}
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
		m.namespace(ns, Origin{config, "namespaceScope.namespaces"})
	}
}

func (m *merger) namespacedObjects(config string, entries []edgev1.NamespaceScopeDownsyncObjects) {
	for i, obj := range entries {
		origin := Origin{config, fmt.Sprintf("namespacedObjects[%d]", i)}
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

func (m *merger) clusterScope(config string, entries []edgev1.ClusterScopeDownsyncResource) {
	for i, cs := range entries {
		origin := Origin{config, fmt.Sprintf("clusterScope[%d]", i)}
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
	b.WriteString("conversions:" + s.conversions.String())
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
