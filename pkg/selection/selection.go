package selection

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// NamespacesResource is the core Namespace resource, selected implicitly by namespaced entries.
var NamespacesResource = wellknown.Namespaces.GroupResource()

const wildcard = edgev1.Wildcard

// Selection is the union of all SyncerConfigs. It is immutable once built.
type Selection struct {
	rules ruleSet
	// statusRules select the objects whose status is returned: those of the configs that did not
	// switch status return off.
	statusRules ruleSet
	// deleteRules select the objects whose edge copies are deleted with them: those of the configs
	// that did not set propagateDeletion to false.
	deleteRules ruleSet
	// writeRules select what the configs that do not only report select; someReportOnly tells that a
	// config only reports.
	writeRules     ruleSet
	someReportOnly bool
	// unpausedRules select what the configs without a pause select; pauses are the paused configs'.
	unpausedRules ruleSet
	pauses        []pause
	requests      []Request
	upsync        []upsyncEntry
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

// Object is what matching needs to know of an object: its resource and kind (objects are matched by
// either, as the configs name them), where it is, and its labels and annotations.
type Object struct {
	Resource    schema.GroupResource
	Kind        string
	Namespace   string
	Name        string
	Labels      labels.Labels
	Annotations labels.Labels
}

// ObjectOf describes an object read from a cache for matching. It copies nothing: the labels and
// annotations are read in place, so the object must not change while the result is in use.
func ObjectOf(gr schema.GroupResource, u *unstructured.Unstructured) Object {
	o := Object{Resource: gr, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	if m, ok := u.Object["metadata"].(map[string]interface{}); ok {
		o.Labels = stringMap(asMap(m["labels"]))
		o.Annotations = stringMap(asMap(m["annotations"]))
	}
	return o
}

func asMap(v interface{}) map[string]interface{} {
	m, _ := v.(map[string]interface{})
	return m
}

// stringMap shows an unstructured object's labels or annotations as labels.Labels without copying
// them.
type stringMap map[string]interface{}

func (m stringMap) Has(key string) bool { _, ok := m[key]; return ok }

func (m stringMap) Get(key string) string { v, _ := m.Lookup(key); return v }

func (m stringMap) Lookup(key string) (string, bool) {
	v, ok := m[key]
	s, _ := v.(string)
	return s, ok
}

// upsyncEntry is one spec.upsync[] entry and where it comes from.
type upsyncEntry struct {
	edgev1.UpsyncSet
	origin Origin
	filter filter
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
	Resource string // a plural resource name, "*", or empty when Kind names the resource
	// Kind names the resource by its objects' kind instead of Resource; with Resource, it must be
	// that resource's kind.
	Kind    string
	Version string // may be empty
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

// rule is what the merged entries with one kind constraint and one filter select of one resource
// (or of every resource of a group, for resource "*"; or of one kind). Namespaced and
// cluster-scoped parts are kept apart; which one applies follows from whether the object has a
// namespace.
type rule struct {
	kind   string // when set (an entry naming both resource and kind), only objects of this kind
	filter filter
	treatment
	allNamespaces bool                        // namespaceScope namespaces "*"
	namespaces    sets.Set[string]            // namespaceScope: every object in these namespaces
	objects       map[string]sets.Set[string] // namespacedObjects: namespace (or "*") -> names (may hold "*")
	clusterAll    bool
	clusterNames  sets.Set[string]
}

// treatment is how a rule's objects are synced beyond being selected.
type treatment struct {
	status mapping.StatusProjection // what of their status is returned
	retain []mapping.FieldPath      // the fields the edge owns, sorted
	drift  mapping.DriftPolicy      // what to do when the edge copy drifts
	// allowEmptying: rewrites that empty the edge copy are not counted by the deletion breaker.
	allowEmptying bool
}

func (t treatment) key() string {
	return t.status.Key() + "|" + mapping.PathsKey(t.retain) + "|" + string(t.drift) + "|" + strconv.FormatBool(t.allowEmptying)
}

func newRule(kind string, f filter, t treatment) *rule {
	return &rule{kind: kind, filter: f, treatment: t, namespaces: sets.New[string](), objects: map[string]sets.Set[string]{}, clusterNames: sets.New[string]()}
}

func (r *rule) empty() bool {
	return !r.allNamespaces && r.namespaces.Len() == 0 && len(r.objects) == 0 && !r.clusterAll && r.clusterNames.Len() == 0
}

// matches tells whether the rule selects the object: its kind, namespace and name, then its
// selectors (the costly part, last).
func (r *rule) matches(o Object) bool {
	return (r.kind == "" || r.kind == o.Kind) && r.matchesName(o.Namespace, o.Name) && r.filter.matches(o)
}

func (r *rule) matchesName(namespace, name string) bool {
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

// namesExplicitly tells whether the rule selects the object and names it itself — by its name in
// namespacedObjects or clusterScope — rather than selecting it through a wildcard or a whole
// namespace.
func (r *rule) namesExplicitly(o Object) bool {
	named := false
	if o.Namespace == "" {
		named = r.clusterNames.Has(o.Name)
	} else {
		for _, ns := range []string{o.Namespace, wildcard} {
			if names, ok := r.objects[ns]; ok && names.Has(o.Name) {
				named = true
			}
		}
	}
	return named && (r.kind == "" || r.kind == o.Kind) && r.filter.matches(o)
}

// ruleSet holds the rules by what they are keyed on: a resource (or "*" of a group), or a kind.
type ruleSet struct {
	byResource map[schema.GroupResource][]*rule
	byKind     map[schema.GroupKind][]*rule
}

func newRuleSet() ruleSet {
	return ruleSet{byResource: map[schema.GroupResource][]*rule{}, byKind: map[schema.GroupKind][]*rule{}}
}

// union is the union of fn over the rules that could concern the object and match it.
func (rs ruleSet) union(o Object, fn func(*rule) mapping.StatusProjection) mapping.StatusProjection {
	var out mapping.StatusProjection
	rs.any(o, func(r *rule) bool {
		if r.matches(o) {
			out = out.Union(fn(r))
		}
		return false
	})
	return out
}

// any tells whether a rule that could concern the object satisfies the test: the rules of its
// resource, of "*" in its group (never for Namespaces, which are selected only by name), and of its
// kind.
func (rs ruleSet) any(o Object, test func(*rule) bool) bool {
	for _, r := range rs.byResource[o.Resource] {
		if test(r) {
			return true
		}
	}
	if o.Resource != NamespacesResource {
		for _, r := range rs.byResource[schema.GroupResource{Group: o.Resource.Group, Resource: wildcard}] {
			if test(r) {
				return true
			}
		}
	}
	if o.Kind != "" {
		for _, r := range rs.byKind[schema.GroupKind{Group: o.Resource.Group, Kind: o.Kind}] {
			if test(r) {
				return true
			}
		}
	}
	return false
}

// target is the rule an entry adds to: the one with the same key, kind constraint, filter and
// treatment.
func (rs ruleSet) target(gr schema.GroupResource, kind string, f filter, t treatment) *rule {
	if gr.Resource == "" {
		gk := schema.GroupKind{Group: gr.Group, Kind: kind}
		r := findRule(rs.byKind[gk], "", f, t)
		if r == nil {
			r = newRule("", f, t)
			rs.byKind[gk] = append(rs.byKind[gk], r)
		}
		return r
	}
	r := findRule(rs.byResource[gr], kind, f, t)
	if r == nil {
		r = newRule(kind, f, t)
		rs.byResource[gr] = append(rs.byResource[gr], r)
	}
	return r
}

func findRule(rules []*rule, kind string, f filter, t treatment) *rule {
	for _, r := range rules {
		if r.kind == kind && r.filter.key == f.key && r.key() == t.key() {
			return r
		}
	}
	return nil
}

// Requests lists the resources the configs name, in a stable order.
func (s *Selection) Requests() []Request { return s.requests }

// Mentions tells whether any config names the resource, directly, through "*" in its group, or by
// its kind (the kind of its objects, "" when unknown).
func (s *Selection) Mentions(gr schema.GroupResource, kind string) bool {
	if s == nil {
		return false
	}
	_, direct := s.rules.byResource[gr]
	_, any := s.rules.byResource[schema.GroupResource{Group: gr.Group, Resource: wildcard}]
	_, byKind := s.rules.byKind[schema.GroupKind{Group: gr.Group, Kind: kind}]
	return direct || any || (kind != "" && byKind)
}

// Names tells whether an entry names gr, by its resource or its kind (not by "*").
func (s *Selection) Names(gr schema.GroupResource, kind string) bool {
	if s == nil {
		return false
	}
	_, direct := s.rules.byResource[gr]
	_, byKind := s.rules.byKind[schema.GroupKind{Group: gr.Group, Kind: kind}]
	return direct || (kind != "" && byKind)
}

// NamespacesOf tells which namespaces the selection may select objects of a namespaced resource in
// (whose objects are of kind, "" when unknown): those that the namespaceScope and namespacedObjects
// entries selecting it (by its resource, by "*" in its group, or by its kind) name, sorted; all is
// set instead when one of them names "*". Label and annotation selectors narrow an entry within its
// namespaces, never beyond them. No namespaces and not all: none of its objects is selected.
func (s *Selection) NamespacesOf(gr schema.GroupResource, kind string) (namespaces []string, all bool) {
	if s == nil {
		return nil, false
	}
	named := sets.New[string]()
	all = s.rules.any(Object{Resource: gr, Kind: kind}, func(r *rule) bool {
		if _, star := r.objects[wildcard]; r.allNamespaces || star {
			return true
		}
		named.Insert(r.namespaces.UnsortedList()...)
		for ns := range r.objects {
			named.Insert(ns)
		}
		return false
	})
	if all {
		return nil, true
	}
	return sets.List(named), false
}

// Matches tells whether the object is selected for downsync. It needs no discovery.
func (s *Selection) Matches(o Object) bool {
	return s != nil && s.rules.any(o, func(r *rule) bool { return r.matches(o) })
}

// NamesExplicitly tells whether a config selects the object by naming it (in namespacedObjects or
// clusterScope), not only through "*" or a whole namespace. Objects apiservers make themselves (see
// mapping.SystemObject) are downsynced only when named so.
func (s *Selection) NamesExplicitly(o Object) bool {
	return s != nil && s.rules.any(o, func(r *rule) bool { return r.namesExplicitly(o) })
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
	s.rules.write(&b)
	b.WriteString("status:")
	s.statusRules.write(&b)
	b.WriteString("delete:")
	s.deleteRules.write(&b)
	b.WriteString("write:")
	s.writeRules.write(&b)
	for _, p := range s.pauses {
		b.WriteString("paused until " + p.until.UTC().Format(time.RFC3339) + ":")
		p.rules.write(&b)
	}
	for _, r := range s.requests {
		fmt.Fprintf(&b, "%s/%s/%s/%s/%v;", r.Group, r.Version, r.Resource, r.Kind, r.Namespaced)
	}
	for _, u := range s.upsync {
		fmt.Fprintf(&b, "%q|%q|%q|%q|%q|%s;", u.APIGroup, u.Resources, u.Kinds, u.Namespaces, u.Names, u.filter.key)
	}
	b.WriteString("conversions:" + s.conversions.String())
	return b.String()
}

func (rs ruleSet) write(b *strings.Builder) {
	keys := make([]string, 0, len(rs.byResource)+len(rs.byKind))
	rules := map[string][]*rule{}
	for gr, r := range rs.byResource {
		keys = append(keys, "resource "+gr.String())
		rules["resource "+gr.String()] = r
	}
	for gk, r := range rs.byKind {
		keys = append(keys, "kind "+gk.String())
		rules["kind "+gk.String()] = r
	}
	sort.Strings(keys)
	for _, key := range keys {
		texts := make([]string, 0, len(rules[key]))
		for _, r := range rules[key] {
			texts = append(texts, r.String())
		}
		sort.Strings(texts) // rules of one key come in config order
		fmt.Fprintf(b, "%s:%v;", key, texts)
	}
}

// String renders what the rule selects, canonically.
func (r *rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q|%q|%q|%v|%v|%v|%v|", r.kind, r.filter.key, r.key(), r.allNamespaces, sets.List(r.namespaces), r.clusterAll, sets.List(r.clusterNames))
	nss := make([]string, 0, len(r.objects))
	for ns := range r.objects {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for _, ns := range nss {
		fmt.Fprintf(&b, "%s=%v,", ns, sets.List(r.objects[ns]))
	}
	return b.String()
}
