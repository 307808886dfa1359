package bootstrap

import (
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	edgev1 "github.com/kubestellar/syncer/pkg/apis/edge/v2alpha1"
	"github.com/kubestellar/syncer/pkg/selection"
)

// RBAC modes.
const (
	// RBACBroad grants the syncer everything on both sides: any SyncerConfig works without running
	// syncer-gen again, at the price of a syncer that could change anything.
	RBACBroad = "broad"
	// RBACLeast grants what the current SyncerConfigs need: a resource added to them later is refused
	// until syncer-gen runs again (re-running updates the roles in place).
	RBACLeast = "least"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	// watchVerbs are what a fenced syncer reads the edge with as itself: its informers list and
	// watch, and every GET goes through its executor (held by the fence, which denies CONNECT). No
	// get: RBAC's "*" covers subresources, and get on nodes/proxy is exec on every node's kubelet,
	// which no admission policy sees.
	watchVerbs = []string{"list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

// resourceSet collects group → resources → verbs, to render compact rules.
type resourceSet map[string]map[string]map[string]bool

func (s resourceSet) add(group, resource string, verbs ...string) {
	if s[group] == nil {
		s[group] = map[string]map[string]bool{}
	}
	if s[group][resource] == nil {
		s[group][resource] = map[string]bool{}
	}
	for _, v := range verbs {
		s[group][resource][v] = true
	}
}

// addAll adds every grant of o.
func (s resourceSet) addAll(o resourceSet) {
	for group, resources := range o {
		for resource, verbs := range resources {
			for v := range verbs {
				s.add(group, resource, v)
			}
		}
	}
}

// rules renders one rule per (group, verb set), resources sorted: stable output for stable diffs.
func (s resourceSet) rules() []rbacv1.PolicyRule {
	type k struct{ group, verbs string }
	byKey := map[k]*rbacv1.PolicyRule{}
	var keys []k
	for group, resources := range s {
		for resource, verbs := range resources {
			vs := make([]string, 0, len(verbs))
			for v := range verbs {
				vs = append(vs, v)
			}
			sort.Strings(vs)
			key := k{group, strings.Join(vs, ",")}
			r, ok := byKey[key]
			if !ok {
				r = &rbacv1.PolicyRule{APIGroups: []string{group}, Verbs: vs}
				byKey[key] = r
				keys = append(keys, key)
			}
			r.Resources = append(r.Resources, resource)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].verbs < keys[j].verbs
	})
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, key := range keys {
		r := byKey[key]
		sort.Strings(r.Resources)
		out = append(out, *r)
	}
	return out
}

// namedResources is what the configs name, per direction and side ("*" kept as a wildcard): RBAC names
// resources, so an entry named by kind is granted every resource of its group, and a conversion
// grants the other side's group likewise.
type namedResources struct {
	downUp, downDown [][2]string // downsync: read upstream, written at the edge
	upUp, upDown     [][2]string // upsync: written upstream, read at the edge
}

// selected lists the downsync and upsync resources the configs name.
func selected(configs []*edgev1.SyncerConfig) namedResources {
	var sel namedResources
	merged, _ := selection.Merge(configs) // for the conversions; the configs' problems are the syncer's to report
	renamed := merged.Conversions().RenamedGroups()
	named := func(group, resource, kind string) [2]string {
		if resource == "" && kind != "" {
			return [2]string{group, "*"}
		}
		return [2]string{group, resource}
	}
	addDown := func(group, resource, kind string) {
		sel.downUp = append(sel.downUp, named(group, resource, kind))
		sel.downDown = append(sel.downDown, named(group, resource, kind))
		for _, g := range renamed[group] {
			sel.downDown = append(sel.downDown, [2]string{g, "*"})
		}
	}
	addUp := func(group, resource string) {
		sel.upDown = append(sel.upDown, [2]string{group, resource})
		sel.upUp = append(sel.upUp, [2]string{group, resource})
		for up, downs := range renamed {
			if slices.Contains(downs, group) {
				sel.upUp = append(sel.upUp, [2]string{up, "*"})
			}
		}
	}
	for _, c := range configs {
		for _, r := range c.Spec.NamespaceScope.Resources {
			addDown(r.Group, r.Resource, r.Kind)
		}
		for _, r := range c.Spec.NamespacedObjects {
			addDown(r.Group, r.Resource, r.Kind)
		}
		for _, r := range c.Spec.ClusterScope {
			addDown(r.Group, r.Resource, r.Kind)
		}
		for _, u := range c.Spec.Upsync {
			for _, res := range u.Resources {
				addUp(u.APIGroup, res)
			}
			if len(u.Kinds) > 0 {
				addUp(u.APIGroup, "*")
			}
		}
	}
	return sel
}

// UpstreamRules are the syncer's permissions in the mailbox workspace.
func UpstreamRules(mode string, configs []*edgev1.SyncerConfig) []rbacv1.PolicyRule {
	s := resourceSet{}
	s.add(edgev1.GroupName, "syncerconfigs", readVerbs...)
	s.add(edgev1.GroupName, "syncerconfigs/status", "get", "update", "patch")
	s.add(edgev1.GroupName, "edgesyncconfigs", readVerbs...)
	s.add(edgev1.GroupName, "edgesyncconfigs/status", "get", "update", "patch")
	s.add("apiextensions.k8s.io", "customresourcedefinitions", readVerbs...)
	s.add("apis.kcp.io", "apibindings", readVerbs...) // in kcp, APIs also come and go by binding
	s.add("", "events", "create", "update", "patch")
	if mode == RBACBroad {
		s.add("*", "*", writeVerbs...)
		return s.rules()
	}
	sel := selected(configs)
	for _, r := range sel.downUp {
		// read; status return writes status (or the object, when there is no status subresource) and
		// patches the annotation naming the sync target as running the object
		s.add(r[0], r[1], "get", "list", "watch", "update", "patch")
		s.add(r[0], r[1]+"/status", "get", "update", "patch")
	}
	if len(sel.downUp) > 0 {
		s.add("", "namespaces", readVerbs...)
	}
	for _, r := range sel.upUp {
		s.add(r[0], r[1], writeVerbs...)
		s.add(r[0], r[1]+"/status", "get", "update", "patch")
	}
	if len(sel.upUp) > 0 {
		s.add("", "namespaces", "get", "list", "watch", "create")
	}
	return s.rules()
}

// DownstreamRules are the syncer's cluster-wide permissions in the edge cluster when it writes there
// as itself (no fence): what it reads and what it writes (the Lease in its namespace is a separate
// Role). Broad: everything.
func DownstreamRules(mode string, configs []*edgev1.SyncerConfig) []rbacv1.PolicyRule {
	if mode == RBACBroad {
		s := resourceSet{}
		s.add("*", "*", "*")
		return s.rules()
	}
	own, writes := edgeRules(mode, configs)
	own.addAll(writes)
	return own.rules()
}

// FencedRules are the edge permissions of a fenced syncer (Fence): own, the syncer's (what it reads,
// and the Events it records), and executor, what it writes as its executor.
func FencedRules(mode string, configs []*edgev1.SyncerConfig) (own, executor []rbacv1.PolicyRule) {
	o, w := edgeRules(mode, configs)
	return o.rules(), w.rules()
}

// edgeRules are the syncer's edge permissions in two: what it reads and records itself, and what it
// writes on its mailboxes' behalf.
func edgeRules(mode string, configs []*edgev1.SyncerConfig) (own, writes resourceSet) {
	own, writes = resourceSet{}, resourceSet{}
	own.add("", "events", "create", "patch") // Events on edge copies for the technician (a pause, a drift held)
	if mode == RBACBroad {
		own.add("*", "*", watchVerbs...)
		writes.add("*", "*", writeVerbs...)
		return own, writes
	}
	// Always watched: CRDs (to notice APIs) and namespaces (objects wait for theirs); Events, Pods
	// and ReplicaSets for the warnings told upstream (--edge-warnings); HorizontalPodAutoscalers, whose
	// targets' replicas are theirs.
	own.add("apiextensions.k8s.io", "customresourcedefinitions", watchVerbs...)
	own.add("", "namespaces", watchVerbs...)
	own.add("", "events", watchVerbs...)
	own.add("", "pods", watchVerbs...)
	own.add("apps", "replicasets", watchVerbs...)
	own.add("autoscaling", "horizontalpodautoscalers", watchVerbs...)
	sel := selected(configs)
	for _, r := range sel.downDown {
		own.add(r[0], r[1], watchVerbs...)
		writes.add(r[0], r[1], writeVerbs...)
	}
	if len(sel.downDown) > 0 {
		writes.add("", "namespaces", writeVerbs...) // the namespaces of namespaced objects
	}
	for _, r := range sel.upDown {
		own.add(r[0], r[1], watchVerbs...)
	}
	return own, writes
}

// policyRules are rules as apply configurations.
func policyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, 0, len(rules))
	for _, r := range rules {
		out = append(out, rbacv1ac.PolicyRule().WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).WithVerbs(r.Verbs...).
			WithResourceNames(r.ResourceNames...).WithNonResourceURLs(r.NonResourceURLs...))
	}
	return out
}
