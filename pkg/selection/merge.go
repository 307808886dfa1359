package selection

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
)

// Merge builds the Selection from every SyncerConfig and EdgeSyncConfig (each read as
// FromEdgeSyncConfig converts it): one union. Entries with no resource or kind are reported as
// problems and skipped; the rest still counts.
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
	s.conversions, mergeProblems = mergeConversions(sources, mergeProblems)
	s.statusRules = subsetRules(s, sources, (*edgev1.SyncerConfigSpec).ReturnsStatus)
	s.deleteRules = subsetRules(s, sources, (*edgev1.SyncerConfigSpec).PropagatesDeletion)
	s.writeRules = subsetRules(s, sources, func(spec *edgev1.SyncerConfigSpec) bool { return !spec.ReportOnly })
	for _, src := range sources {
		s.someReportOnly = s.someReportOnly || src.cfg.Spec.ReportOnly
	}
	s.unpausedRules, s.pauses, mergeProblems = mergePauses(s, sources, mergeProblems)
	return s, append(problems, mergeProblems...)
}

// mergePauses finds the SyncerConfigs paused by mapping.PausedUntilAnnotation: what each selects, and
// what the others do. A malformed time is a problem of its config, which is then not paused.
func mergePauses(s *Selection, sources []source, problems []problem.Problem) (ruleSet, []pause, []problem.Problem) {
	var unpaused []source
	var pauses []pause
	sorted := append([]source(nil), sources...) // pauses in a stable order, for Equal
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].cfg.Name < sorted[j].cfg.Name })
	for _, src := range sorted {
		v, ok := src.cfg.Annotations[mapping.PausedUntilAnnotation]
		if !ok || src.kind != problem.SyncerConfig {
			unpaused = append(unpaused, src)
			continue
		}
		until, err := mapping.ParsePause(v)
		if err != nil {
			problems = append(problems, src.origin("metadata.annotations").Problem(problem.InvalidConfig, schema.GroupResource{},
				err.Error()+"; the config is not paused"))
			unpaused = append(unpaused, src)
			continue
		}
		r, _ := merge([]source{src})
		pauses = append(pauses, pause{until: until, rules: r.rules})
	}
	if len(pauses) == 0 {
		return s.rules, nil, problems
	}
	r, _ := merge(unpaused)
	return r.rules, pauses, problems
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

// mergeConversions merges every config's conversions; rules that do not apply are problems of the
// configs they come from.
func mergeConversions(sources []source, problems []problem.Problem) (*mapping.Conversions, []problem.Problem) {
	form := func(r edgev1.EdgeSyncConfigResource) mapping.Form {
		name := r.Name
		if name == wildcard {
			name = "" // every object of the kind
		}
		return mapping.Form{Group: r.Group, Version: r.Version, Kind: r.Kind, Name: name}
	}
	var rules []mapping.ConversionRule
	kinds := map[string]string{} // rule origin -> its config's kind
	for _, src := range sources {
		for i, c := range src.cfg.Spec.Conversions {
			o := src.origin(fmt.Sprintf("conversions[%d]", i))
			// ConversionRule names its config with its kind, so that a SyncerConfig and an
			// EdgeSyncConfig of one name stay apart.
			config := src.kind + "/" + o.Config
			kinds[config] = src.kind
			rules = append(rules, mapping.ConversionRule{Up: form(c.Upstream), Down: form(c.Downstream), Config: config, Field: o.Field})
		}
	}
	conversions, errs := mapping.NewConversions(rules)
	for _, e := range errs {
		name := strings.TrimPrefix(e.Config, kinds[e.Config]+"/")
		problems = append(problems, problem.Problem{Kind: problem.InvalidConfig, ConfigKind: kinds[e.Config], Config: name, Field: e.Field, Reason: e.Reason})
	}
	return conversions, problems
}

// subsetRules are the rules of the configs whose spec has the property: a union, like the whole.
func subsetRules(s *Selection, sources []source, has func(*edgev1.SyncerConfigSpec) bool) ruleSet {
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
	m := &merger{s: &Selection{rules: newRuleSet()}, seen: map[requestKey]int{}}
	m.nsRule = m.s.rules.target(NamespacesResource, "", filter{}, treatment{status: mapping.StatusProjection{All: true}})
	sorted := append([]source(nil), sources...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return a.cfg.Name < b.cfg.Name || (a.cfg.Name == b.cfg.Name && a.kind < b.kind)
	})
	for _, src := range sorted {
		spec := src.cfg.Spec
		if src.kind == problem.SyncerConfig && len(spec.NamespaceScope.Resources) == 0 && len(spec.NamespacedObjects) == 0 &&
			len(spec.ClusterScope) == 0 && len(spec.Upsync) == 0 && len(spec.Conversions) == 0 {
			m.problems = append(m.problems, problem.Problem{Kind: problem.EmptyConfig, ConfigKind: src.kind, Config: src.cfg.Name,
				Reason: "selects nothing: no namespaceScope resources, namespacedObjects, clusterScope or upsync entries"})
		}
		m.namespaceScope(src, spec.NamespaceScope)
		m.namespacedObjects(src, spec.NamespacedObjects)
		m.clusterScope(src, spec.ClusterScope)
		m.upsync(src, spec.Upsync)
	}
	if !m.nsRule.empty() {
		m.request(Request{Resource: NamespacesResource.Resource, Version: "v1", Namespaced: false}, Origin{Field: "namespaces of the selected objects"})
	} else {
		rest := slices.DeleteFunc(m.s.rules.byResource[NamespacesResource], func(r *rule) bool { return r == m.nsRule })
		if len(rest) == 0 {
			delete(m.s.rules.byResource, NamespacesResource)
		} else {
			m.s.rules.byResource[NamespacesResource] = rest
		}
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
	group, resource, kind, version string
	namespaced                     bool
}

func (m *merger) invalid(o Origin, reason string) {
	m.problems = append(m.problems, o.Problem(problem.InvalidConfig, schema.GroupResource{}, reason))
}

// request records that a config entry names a resource; one request per resource and version, with
// every entry that names it.
func (m *merger) request(r Request, o Origin) {
	key := requestKey{r.Group, r.Resource, r.Kind, r.Version, r.Namespaced}
	if i, ok := m.seen[key]; ok {
		m.s.requests[i].Origins = append(m.s.requests[i].Origins, o)
		return
	}
	m.seen[key] = len(m.s.requests)
	r.Origins = []Origin{o}
	m.s.requests = append(m.s.requests, r)
}

// entry is what every downsync entry has: the resource (by name, kind or both), its version and its
// selectors.
type entry struct {
	group, resource, kind, version string
	labels, annotations            *metav1.LabelSelector
	policy                         edgev1.EntryPolicy
}

// rule checks an entry, requests its resource and returns the rule its objects go to; nil (with the
// problem reported) when the entry cannot be used. A kind of "*" is the resource "*"; the resource
// "*" with a kind is that kind.
func (m *merger) rule(o Origin, e entry, namespaced bool) *rule {
	resource, kind := e.resource, e.kind
	switch {
	case kind == wildcard:
		kind = ""
		if resource == "" {
			resource = wildcard
		}
	case resource == wildcard && kind != "":
		resource = ""
	}
	if resource == "" && kind == "" {
		m.invalid(o, "resource and kind are empty: name the resource by one of them")
		return nil
	}
	if why := badVersion(e.version); why != "" {
		m.invalid(o, why)
		return nil
	}
	f, err := newFilter(e.labels, e.annotations)
	if err != nil {
		m.invalid(o, err.Error()+"; the entry selects nothing")
		return nil
	}
	status, why := projectionOf(e.policy.StatusReturn)
	if why != "" {
		m.invalid(o, why)
		return nil
	}
	m.request(Request{Group: e.group, Resource: resource, Kind: kind, Version: e.version, Namespaced: namespaced}, o)
	drift, err := mapping.ParseDriftPolicy(e.policy.Drift)
	if err != nil {
		m.invalid(o, "drift: "+err.Error()+"; drift is corrected")
	}
	return m.s.rules.target(schema.GroupResource{Group: e.group, Resource: resource}, kind, f,
		treatment{status: status, retain: m.retained(o, e.policy.RetainFields), drift: drift, allowEmptying: e.policy.AllowEmptying})
}

// retained parses an entry's retainFields. A path that is not one is a problem of the config and is
// left out: the entry still selects its objects (the syncer then applies that field, as before it
// was named).
func (m *merger) retained(o Origin, texts []string) []mapping.FieldPath {
	var paths []mapping.FieldPath
	for _, text := range texts {
		p, err := mapping.ParseFieldPath(text)
		if err != nil {
			m.invalid(o, "retainFields: "+err.Error()+"; the syncer applies that field")
			continue
		}
		paths = append(paths, p)
	}
	return mapping.SortPaths(paths)
}

// projectionOf is what an entry's statusReturn returns, or why it is invalid.
func projectionOf(r *edgev1.StatusReturn) (mapping.StatusProjection, string) {
	switch {
	case r == nil:
		return mapping.StatusProjection{All: true}, ""
	case r.MaxBytes < 0:
		return mapping.StatusProjection{}, fmt.Sprintf("statusReturn.maxBytes %d is negative; the entry selects nothing", r.MaxBytes)
	case !r.Returns():
		return mapping.StatusProjection{}, ""
	}
	p := mapping.StatusProjection{All: len(r.Fields) == 0, MaxBytes: r.MaxBytes}
	seen := sets.New[string]()
	for _, f := range r.Fields {
		if f == "" || slices.Contains(strings.Split(f, "."), "") {
			return mapping.StatusProjection{}, fmt.Sprintf("statusReturn.fields: %q is not a field name or a dotted path of them; the entry selects nothing", f)
		}
		seen.Insert(f)
	}
	p.Fields = sets.List(seen)
	return p, ""
}

// badVersion says why a requested version is not a version at all ("" when it is one, or empty): a
// version is a DNS-1035 label, as the apiserver requires of every served version (v1, v1beta1, v2alpha1).
// A group/version pair ("apps/v1") is the common mistake: the group has a field of its own.
func badVersion(version string) string {
	if version == "" || len(validation.IsDNS1035Label(version)) == 0 {
		return ""
	}
	hint := ""
	if group, v, ok := strings.Cut(version, "/"); ok {
		hint = fmt.Sprintf("; for group %q at version %q, write the group in its own field and %q as the version", group, v, v)
	}
	return fmt.Sprintf("apiVersion %q is not a version: a version is a name such as v1 or v1beta1%s; the entry selects nothing", version, hint)
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
		r := m.rule(origin, entry{res.Group, res.Resource, res.Kind, res.APIVersion, res.LabelSelector, res.AnnotationSelector, res.EntryPolicy}, true)
		if r == nil {
			continue
		}
		for _, ns := range scope.Namespaces {
			if ns == wildcard {
				r.allNamespaces = true
			} else {
				r.namespaces.Insert(ns)
			}
		}
	}
	// The Namespace objects named by namespaceScope are downsynced themselves.
	for _, ns := range scope.Namespaces {
		m.namespace(ns, src.origin("namespaceScope.namespaces"))
	}
}

func (m *merger) namespacedObjects(src source, entries []edgev1.NamespaceScopeDownsyncObjects) {
	for i, obj := range entries {
		origin := src.origin(fmt.Sprintf("namespacedObjects[%d]", i))
		r := m.rule(origin, entry{obj.Group, obj.Resource, obj.Kind, obj.APIVersion, obj.LabelSelector, obj.AnnotationSelector, obj.EntryPolicy}, true)
		if r == nil {
			continue
		}
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
	}
}

func (m *merger) clusterScope(src source, entries []edgev1.ClusterScopeDownsyncResource) {
	for i, cs := range entries {
		origin := src.origin(fmt.Sprintf("clusterScope[%d]", i))
		r := m.rule(origin, entry{cs.Group, cs.Resource, cs.Kind, cs.APIVersion, cs.LabelSelector, cs.AnnotationSelector, cs.EntryPolicy}, false)
		if r == nil {
			continue
		}
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
	}
}

func (m *merger) upsync(src source, entries []edgev1.UpsyncSet) {
	for i, u := range entries {
		origin := src.origin(fmt.Sprintf("upsync[%d]", i))
		f, err := newFilter(u.LabelSelector, u.AnnotationSelector)
		if err != nil {
			m.invalid(origin, err.Error()+"; the entry upsyncs nothing")
			continue
		}
		m.s.upsync = append(m.s.upsync, upsyncEntry{UpsyncSet: u, origin: origin, filter: f})
	}
}
