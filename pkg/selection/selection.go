package selection

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
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
	requests    []Request
	upsync      []edgev1.UpsyncSet
}

// Request is one resource named by a config, before resolution against discovery.
type Request struct {
	Group    string
	Resource string // a plural resource name, or "*"
	Version  string // may be empty
	// Namespaced tells which part of the config named it: namespaceScope and namespacedObjects name
	// namespaced resources, clusterScope cluster-scoped ones.
	Namespaced bool
	// Origin names the config entry, for error messages.
	Origin string
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

// Merge builds the Selection from every SyncerConfig. Entries with no resource name are reported as
// problems and skipped; the rest still counts.
func Merge(configs []*edgev1.SyncerConfig) (*Selection, []string) {
	s, problems := merge(configs)
	var returning []*edgev1.SyncerConfig
	for _, cfg := range configs {
		if cfg.Spec.ReturnsStatus() {
			returning = append(returning, cfg)
		}
	}
	if len(returning) == len(configs) {
		s.statusRules = s.rules
	} else {
		r, _ := merge(returning)
		s.statusRules = r.rules
	}
	return s, problems
}

func merge(configs []*edgev1.SyncerConfig) (*Selection, []string) {
	s := &Selection{rules: map[schema.GroupResource]*rule{}}
	var problems []string
	sorted := append([]*edgev1.SyncerConfig(nil), configs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	seen := map[Request]bool{}
	addRequest := func(r Request) {
		key := r
		key.Origin = ""
		if !seen[key] {
			seen[key] = true
			s.requests = append(s.requests, r)
		}
	}
	nsRule := s.rule(NamespacesResource)
	for _, cfg := range sorted {
		spec := cfg.Spec
		nsScope := spec.NamespaceScope
		for i, res := range nsScope.Resources {
			origin := fmt.Sprintf("SyncerConfig %s: namespaceScope.resources[%d]", cfg.Name, i)
			if res.Resource == "" {
				problems = append(problems, origin+": resource is empty")
				continue
			}
			r := s.rule(schema.GroupResource{Group: res.Group, Resource: res.Resource})
			for _, ns := range nsScope.Namespaces {
				if ns == wildcard {
					r.allNamespaces = true
				} else {
					r.namespaces.Insert(ns)
				}
			}
			addRequest(Request{Group: res.Group, Resource: res.Resource, Version: res.APIVersion, Namespaced: true, Origin: origin})
		}
		// The Namespace objects named by namespaceScope are downsynced themselves.
		for _, ns := range nsScope.Namespaces {
			if ns == wildcard {
				nsRule.clusterAll = true
			} else {
				nsRule.clusterNames.Insert(ns)
			}
		}
		for i, obj := range spec.NamespacedObjects {
			origin := fmt.Sprintf("SyncerConfig %s: namespacedObjects[%d]", cfg.Name, i)
			if obj.Resource == "" {
				problems = append(problems, origin+": resource is empty")
				continue
			}
			r := s.rule(schema.GroupResource{Group: obj.Group, Resource: obj.Resource})
			for _, byNS := range obj.ObjectsByNamespace {
				if byNS.Namespace == "" {
					problems = append(problems, origin+": objectsByNamespace entry without namespace")
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
				if byNS.Namespace == wildcard {
					nsRule.clusterAll = true
				} else {
					nsRule.clusterNames.Insert(byNS.Namespace)
				}
			}
			addRequest(Request{Group: obj.Group, Resource: obj.Resource, Version: obj.APIVersion, Namespaced: true, Origin: origin})
		}
		for i, cs := range spec.ClusterScope {
			origin := fmt.Sprintf("SyncerConfig %s: clusterScope[%d]", cfg.Name, i)
			if cs.Resource == "" {
				problems = append(problems, origin+": resource is empty")
				continue
			}
			r := s.rule(schema.GroupResource{Group: cs.Group, Resource: cs.Resource})
			switch {
			case cs.Objects == nil: // omitted means all, as in release-0.14
				r.clusterAll = true
			default:
				for _, name := range cs.Objects {
					if name == wildcard {
						r.clusterAll = true
					} else {
						r.clusterNames.Insert(name)
					}
				}
			}
			addRequest(Request{Group: cs.Group, Resource: cs.Resource, Version: cs.APIVersion, Namespaced: false, Origin: origin})
		}
		s.upsync = append(s.upsync, spec.Upsync...)
	}
	if nsRule.clusterAll || nsRule.clusterNames.Len() > 0 {
		addRequest(Request{Resource: NamespacesResource.Resource, Version: "v1", Namespaced: false, Origin: "namespaces of the selected objects"})
	} else {
		delete(s.rules, NamespacesResource)
	}
	return s, problems
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

// Upsync returns the merged upsync entries.
func (s *Selection) Upsync() []edgev1.UpsyncSet { return s.upsync }

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

// ReturnsStatus tells whether the status of a downsynced object is to be written back upstream.
func (s *Selection) ReturnsStatus(gr schema.GroupResource, namespace, name string) bool {
	return s != nil && matchRules(s.statusRules, gr, namespace, name)
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
	for _, r := range s.requests {
		fmt.Fprintf(&b, "%s/%s/%s/%v;", r.Group, r.Version, r.Resource, r.Namespaced)
	}
	fmt.Fprintf(&b, "%v", s.upsync)
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
