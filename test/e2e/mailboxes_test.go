package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubestellar/syncer/test/support"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubestellar/syncer/pkg/bootstrap"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/wellknown"
	"github.com/kubestellar/syncer/test/testenv"
)

var (
	gvrSecrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrEvents      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	gvrAPIBindings = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}
)

const skipUnlessKCPExport = "one syncer for many mailboxes reads kcp's APIExport virtual workspace: run with E2E_UPSTREAM=kcp"

// workspaceClients are admin clients of one kcp workspace.
func workspaceClients(t *testing.T, ws *testenv.Workspace) clients {
	t.Helper()
	s, err := ws.Server()
	if err != nil {
		t.Fatalf("clients of %s: %v", ws.Path, err)
	}
	return mustClients(s)
}

// clusterOf returns the names of objs by the logical cluster in their kcp.io/cluster annotation.
func clusterOf(objs []unstructured.Unstructured) map[string][]string {
	out := map[string][]string{}
	for _, o := range objs {
		c := o.GetAnnotations()["kcp.io/cluster"]
		out[c] = append(out[c], o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

// TestKCPExportBed checks the kcp facts the many-mailboxes mode stands on, with no syncer: through
// the virtual workspace of one APIExport, one request per resource lists the exported objects
// (SyncerConfigs, Deployments) and the claimed ones (ConfigMaps, Secrets, Namespaces, ClusterRoles)
// of every bound workspace, each object naming its workspace in kcp.io/cluster; one workspace is
// addressed by its logical cluster. Unbinding a workspace deletes its exported objects, drops its
// APIBinding from the virtual workspace and closes its path there.
func TestKCPExportBed(t *testing.T) {
	if !upstreamIsKCP() {
		support.SkipBecause(t, skipUnlessKCPExport)
	}
	f := newFixture(t)
	bed, err := env.SetUpKCPExport(f.ctx, testenv.KCPExportOptions{Prefix: "mwbed", Mailboxes: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range bed.Mailboxes {
		c := workspaceClients(t, ws)
		f.create(c, gvrNamespaces, obj("v1", "Namespace", "", "bed", nil))
		f.create(c, gvrConfigMaps, configMap("bed", "cm", map[string]interface{}{"from": ws.Name}))
		f.create(c, gvrSecrets, obj("v1", "Secret", "bed", "s", map[string]interface{}{"stringData": map[string]interface{}{"from": ws.Name}}))
		f.create(c, gvrDeployments, deployment("bed", "web", 1))
		f.create(c, gvrClusterRoles, obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "bed-role", nil))
		f.create(c, gvrSyncerConfig, obj("edge.kubestellar.io/v2alpha1", "SyncerConfig", "", "bed",
			map[string]interface{}{"spec": nsScope([]string{"bed"}, resource("", "v1", "configmaps"))}))
	}
	url, err := bed.EndpointURL(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/services/apiexport/" + bed.Provider.Cluster + "/" + testenv.WorkspacesExport; !strings.HasSuffix(url, want) {
		t.Errorf("endpoint URL %s does not end with %s", url, want)
	}
	cfg, err := bed.VirtualWorkspaceConfig(f.ctx, "*")
	if err != nil {
		t.Fatal(err)
	}
	all := dynamic.NewForConfigOrDie(cfg)
	// listedIn waits until a wildcard list of gvr holds name from exactly the given workspaces.
	listedIn := func(gvr schema.GroupVersionResource, name string, want ...*testenv.Workspace) {
		t.Helper()
		eventually(t, 30*time.Second, fmt.Sprintf("%s %s of %d workspaces in the virtual workspace", gvr.Resource, name, len(want)), func() (bool, string) {
			list, err := all.Resource(gvr).List(f.ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			got := clusterOf(slices.DeleteFunc(list.Items, func(o unstructured.Unstructured) bool { return o.GetName() != name }))
			ok := len(got) == len(want)
			for _, ws := range want {
				ok = ok && len(got[ws.Cluster]) == 1
			}
			return ok, fmt.Sprintf("by logical cluster: %v", got)
		})
	}
	for _, r := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrConfigMaps, "cm"}, {gvrSecrets, "s"}, {gvrDeployments, "web"}, {gvrNamespaces, "bed"}, {gvrClusterRoles, "bed-role"},
		{gvrSyncerConfig, "bed"}, {gvrAPIBindings, testenv.WorkspacesExport}} {
		listedIn(r.gvr, r.name, bed.Mailboxes...)
	}
	if _, err := all.Resource(gvrEvents).List(f.ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("listing events in the virtual workspace: %v", err)
	}

	first, second := bed.Mailboxes[0], bed.Mailboxes[1]
	oneCfg, err := bed.VirtualWorkspaceConfig(f.ctx, first.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	one := dynamic.NewForConfigOrDie(oneCfg)
	cm, err := one.Resource(gvrConfigMaps).Namespace("bed").Get(f.ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting bed/cm of %s through the virtual workspace: %v", first.Path, err)
	}
	if ok, msg := dataEquals("from", first.Name)(cm); !ok {
		t.Errorf("bed/cm of %s through the virtual workspace: %s", first.Path, msg)
	}

	if err := bed.Unbind(f.ctx, second); err != nil {
		t.Fatal(err)
	}
	listedIn(gvrSyncerConfig, "bed", first)
	listedIn(gvrAPIBindings, testenv.WorkspacesExport, first)
	twoCfg, err := bed.VirtualWorkspaceConfig(f.ctx, second.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the unbound workspace's path refused in the virtual workspace", func() (bool, string) {
		_, err := dynamic.NewForConfigOrDie(twoCfg).Resource(gvrConfigMaps).Namespace("bed").Get(f.ctx, "cm", metav1.GetOptions{})
		return apierrors.IsForbidden(err) || apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}

// mailbox is one workspace of TestManyMailboxes with its clients and its edge namespace of "shop".
type mailbox struct {
	ws     *testenv.Workspace
	c      clients
	shop   string // the edge namespace of its namespace shop
	role   string // a ClusterRole only this workspace has
	config map[string]interface{}
}

// edgeRef names an object at the edge.
type edgeRef struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

func (r edgeRef) String() string { return r.gvr.Resource + " " + r.namespace + "/" + r.name }

// edgeObjects are the edge copies of the workspace's downsynced objects, its namespace last.
func (m *mailbox) edgeObjects() []edgeRef {
	return []edgeRef{{gvrDeployments, m.shop, "web"}, {gvrConfigMaps, m.shop, "app"}, {gvrClusterRoles, "", m.role}, {gvrNamespaces, "", m.shop}}
}

// TestManyMailboxes: one syncer serves three kcp workspaces bound to one APIExport,
// started from the provider workspace with --apiexport-endpoint-slice. Each workspace holds the same
// names: namespace shop, ConfigMap shop/app (data of its own), Deployment shop/web (replicas of its
// own), and a SyncerConfig selecting them. At the edge each workspace's shop is a namespace of its
// own (mapping.WorkspaceNamespace), recorded in the marks; the edge Deployments' status returns to
// their own workspace; a ClusterRole of the same name in a second workspace is a reported conflict,
// not an overwrite; an update in one workspace changes only its copy; an edge Secret upsyncs to the
// workspace of its edge namespace only; a SyncerConfig selects nothing of another workspace. The
// workspaces gauge counts the bound workspaces. A workspace unbinding has its edge objects deleted
// while the syncer runs, and so does one unbinding while it is stopped, the others untouched.
func TestManyMailboxes(t *testing.T) {
	if !upstreamIsKCP() {
		support.SkipBecause(t, skipUnlessKCPExport)
	}
	f := newFixture(t)
	bed, err := env.SetUpKCPExport(f.ctx, testenv.KCPExportOptions{Prefix: "mw", Mailboxes: 3})
	if err != nil {
		t.Fatal(err)
	}
	var boxes []*mailbox
	for _, ws := range bed.Mailboxes {
		m := &mailbox{ws: ws, c: workspaceClients(t, ws), shop: mapping.WorkspaceNamespace(ws.Cluster, "shop"), role: ws.Name + "-role"}
		t.Logf("workspace %s: logical cluster %s, edge namespace of shop %s", ws.Path, ws.Cluster, m.shop)
		boxes = append(boxes, m)
	}
	t.Cleanup(func() { // after the syncer has stopped (clean-ups run last first)
		ctx := context.Background()
		for _, m := range boxes {
			_ = f.down.dyn.Resource(gvrNamespaces).Delete(ctx, m.shop, metav1.DeleteOptions{})
			_ = f.down.dyn.Resource(gvrClusterRoles).Delete(ctx, m.role, metav1.DeleteOptions{})
		}
		_ = f.down.dyn.Resource(gvrClusterRoles).Delete(ctx, "shared-role", metav1.DeleteOptions{})
	})
	a, b, c := boxes[0], boxes[1], boxes[2]

	clusterRole := func(name, verb string) *unstructured.Unstructured {
		return obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", name, map[string]interface{}{"rules": []interface{}{
			map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"configmaps"}, "verbs": []interface{}{verb}}}})
	}
	for i, m := range boxes {
		namespaces := []string{"shop"}
		if m == b {
			// b's config also names a namespace that only a holds: it must select nothing there.
			namespaces = append(namespaces, "backroom")
		}
		m.config = nsScope(namespaces, resource("", "v1", "configmaps"), resource("apps", "v1", "deployments"))
		m.config["clusterScope"] = []interface{}{map[string]interface{}{"group": "rbac.authorization.k8s.io", "apiVersion": "v1", "resource": "clusterroles",
			"objects": []interface{}{"shared-role", m.role}}}
		m.config["upsync"] = []interface{}{map[string]interface{}{
			"apiGroup": "", "resources": []interface{}{"secrets"}, "namespaces": []interface{}{"shop"}, "names": []interface{}{"report"}}}
		f.create(m.c, gvrNamespaces, obj("v1", "Namespace", "", "shop", nil))
		f.create(m.c, gvrConfigMaps, configMap("shop", "app", map[string]interface{}{"from": m.ws.Name}))
		f.create(m.c, gvrDeployments, deployment("shop", "web", int64(i+1)))
		f.create(m.c, gvrClusterRoles, clusterRole(m.role, "watch"))
		f.create(m.c, gvrSyncerConfig, obj("edge.kubestellar.io/v2alpha1", "SyncerConfig", "", "mailbox", map[string]interface{}{"spec": m.config}))
	}
	// The shared ClusterRole: a's first; b's only once a's is at the edge, so that a's wins.
	f.create(a.c, gvrClusterRoles, clusterRole("shared-role", "get"))
	f.create(a.c, gvrNamespaces, obj("v1", "Namespace", "", "backroom", nil))
	f.create(a.c, gvrConfigMaps, configMap("backroom", "stash", map[string]interface{}{"from": a.ws.Name}))

	// --upstream-kubeconfig given again: the last one counts, the provider workspace instead of the mailbox.
	start := func() *syncerProc {
		return f.startSyncer(withArgs("--upstream-kubeconfig="+bed.Provider.Kubeconfig, "--apiexport-endpoint-slice="+bed.Export.Name,
			"--heartbeat-period=1s", "--conflict-recheck-period=2s", "--upsync-secrets", "--drain-quiet-period=2s"))
	}
	p := start()

	// Isolation: three edge namespaces for the three shops, each holding its own workspace's data.
	fromWorkspace := func(m *mailbox, upstreamNS string) func(*unstructured.Unstructured) (bool, string) {
		return func(o *unstructured.Unstructured) (bool, string) {
			if ok, msg := hasMark(o); !ok {
				return false, msg
			}
			ann := o.GetAnnotations()
			if ann[mapping.ClusterAnnotation] != m.ws.Cluster || o.GetLabels()[mapping.OwnerLabel] != f.name {
				return false, fmt.Sprintf("annotation %s = %q (want %q), label %s = %q (want %q)", mapping.ClusterAnnotation, ann[mapping.ClusterAnnotation], m.ws.Cluster,
					mapping.OwnerLabel, o.GetLabels()[mapping.OwnerLabel], f.name)
			}
			if upstreamNS != "" && ann[mapping.UpstreamNamespaceAnnotation] != upstreamNS {
				return false, fmt.Sprintf("annotation %s = %q, want %q", mapping.UpstreamNamespaceAnnotation, ann[mapping.UpstreamNamespaceAnnotation], upstreamNS)
			}
			return true, ""
		}
	}
	and := func(checks ...func(*unstructured.Unstructured) (bool, string)) func(*unstructured.Unstructured) (bool, string) {
		return func(o *unstructured.Unstructured) (bool, string) {
			for _, check := range checks {
				if ok, msg := check(o); !ok {
					return false, msg
				}
			}
			return true, ""
		}
	}
	for _, m := range boxes {
		f.waitFor(f.down, gvrNamespaces, "", m.shop, fromWorkspace(m, "shop"))
		f.waitFor(f.down, gvrConfigMaps, m.shop, "app", and(fromWorkspace(m, "shop"), dataEquals("from", m.ws.Name)))
		f.waitFor(f.down, gvrDeployments, m.shop, "web", fromWorkspace(m, "shop"))
		f.waitFor(f.down, gvrClusterRoles, "", m.role, fromWorkspace(m, ""))
	}
	f.waitFor(f.down, gvrClusterRoles, "", "shared-role", fromWorkspace(a, ""))
	for _, ns := range []string{"shop", "backroom", mapping.WorkspaceNamespace(a.ws.Cluster, "backroom"), mapping.WorkspaceNamespace(b.ws.Cluster, "backroom")} {
		if _, err := f.get(f.down, gvrNamespaces, "", ns); !apierrors.IsNotFound(err) {
			t.Errorf("edge namespace %s: %v, want not found (no config of its workspace selects it, or it is an upstream name)", ns, err)
		}
	}

	// Status return: each edge Deployment's status (its own replica count) reaches its own workspace.
	for i, m := range boxes {
		want := int64(i + 1)
		up := f.waitFor(m.c, gvrDeployments, "shop", "web", func(o *unstructured.Unstructured) (bool, string) {
			r, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
			g, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			return r == want && g >= 1, fmt.Sprintf("status.replicas %d (want %d), observedGeneration %d", r, want, g)
		})
		edge, err := f.get(f.down, gvrDeployments, m.shop, "web")
		if err != nil {
			t.Fatal(err)
		}
		edgeReplicas, _, _ := unstructured.NestedInt64(edge.Object, "status", "replicas")
		upConds, _, _ := unstructured.NestedSlice(up.Object, "status", "conditions")
		if edgeReplicas != want || len(upConds) == 0 {
			t.Errorf("%s: edge Deployment %s/web status.replicas %d (want %d); upstream conditions %v", m.ws.Path, m.shop, edgeReplicas, want, upConds)
		}
	}

	// The gauge: three workspaces served.
	gauge := func(p *syncerProc, syncing float64) {
		t.Helper()
		eventually(t, 30*time.Second, fmt.Sprintf("%v workspaces syncing, none draining", syncing), func() (bool, string) {
			m, err := p.scrape()
			if err != nil {
				return false, err.Error()
			}
			s, d := m[`kubestellar_syncer_workspaces{state="syncing"}`], m[`kubestellar_syncer_workspaces{state="draining"}`]
			return s == syncing && d == 0, fmt.Sprintf("syncing %v, draining %v", s, d)
		})
	}
	gauge(p, 3)

	// The same ClusterRole name in b: a conflict reported in b, a's copy kept.
	f.create(b.c, gvrClusterRoles, clusterRole("shared-role", "list"))
	eventually(t, 30*time.Second, "a Conflict Event on b's shared-role", func() (bool, string) {
		events, err := b.c.kube.CoreV1().Events("").List(f.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=shared-role"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Reason == "Conflict" && e.InvolvedObject.Kind == "ClusterRole" {
				return true, ""
			}
			seen = append(seen, e.Reason+" "+e.InvolvedObject.Kind)
		}
		return false, fmt.Sprintf("events on shared-role: %v", seen)
	})
	f.waitFor(b.c, gvrSyncerConfig, "", "mailbox", func(o *unstructured.Unstructured) (bool, string) {
		st, _, msg := conditionOf(o, "ObjectsSynced")
		return st == "False" && strings.Contains(msg, "shared-role"), fmt.Sprintf("ObjectsSynced %s %q", st, msg)
	})
	for _, m := range []*mailbox{a, c} {
		if o, err := f.get(m.c, gvrSyncerConfig, "", "mailbox"); err != nil {
			t.Error(err)
		} else if _, _, msg := conditionOf(o, "ObjectsSynced"); strings.Contains(msg, "shared-role") {
			t.Errorf("%s: ObjectsSynced names b's conflict: %q", m.ws.Path, msg)
		}
	}
	sharedIsA := func() (bool, string) {
		o, err := f.get(f.down, gvrClusterRoles, "", "shared-role")
		if err != nil {
			return false, err.Error()
		}
		if ok, msg := fromWorkspace(a, "")(o); !ok {
			return false, msg
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		return fmt.Sprint(rules) == fmt.Sprint(clusterRole("", "get").Object["rules"]), fmt.Sprintf("rules %v, want a's", rules)
	}
	consistently(t, 3*time.Second, "a's shared-role at the edge", sharedIsA)

	// An update in b changes b's copy only.
	f.update(b.c, gvrConfigMaps, "shop", "app", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, b.ws.Name+"-v2", "data", "from")
	})
	f.waitFor(f.down, gvrConfigMaps, b.shop, "app", dataEquals("from", b.ws.Name+"-v2"))
	for _, m := range []*mailbox{a, c} {
		if o, err := f.get(f.down, gvrConfigMaps, m.shop, "app"); err != nil {
			t.Error(err)
		} else if ok, msg := dataEquals("from", m.ws.Name)(o); !ok {
			t.Errorf("%s's edge copy after b's update: %s", m.ws.Path, msg)
		}
	}

	// Upsync: an edge Secret in a's shop goes to a's shop only, though every workspace's config names it.
	f.create(f.down, gvrSecrets, obj("v1", "Secret", a.shop, "report", map[string]interface{}{"stringData": map[string]interface{}{"result": "pass"}}))
	f.waitFor(a.c, gvrSecrets, "shop", "report", func(o *unstructured.Unstructured) (bool, string) {
		if ok, msg := upsynced(o); !ok {
			return false, msg
		}
		got, _, _ := unstructured.NestedString(o.Object, "data", "result")
		return got == base64.StdEncoding.EncodeToString([]byte("pass")), fmt.Sprintf("data.result %q", got)
	})
	consistently(t, 2*time.Second, "no report in b and c", func() (bool, string) {
		for _, m := range []*mailbox{b, c} {
			if _, err := f.get(m.c, gvrSecrets, "shop", "report"); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%s: shop/report: %v", m.ws.Path, err)
			}
		}
		return true, ""
	})

	// intact checks that the edge still holds m's objects; gone waits until it holds none of them.
	intact := func(m *mailbox) {
		t.Helper()
		for _, r := range m.edgeObjects() {
			o, err := f.get(f.down, r.gvr, r.namespace, r.name)
			if err != nil {
				t.Errorf("%s's %s at the edge: %v", m.ws.Path, r, err)
			} else if o.GetDeletionTimestamp() != nil {
				t.Errorf("%s's %s at the edge is being deleted", m.ws.Path, r)
			}
		}
	}
	gone := func(m *mailbox) {
		t.Helper()
		for _, r := range m.edgeObjects() {
			eventually(t, time.Minute, fmt.Sprintf("%s's %s gone from the edge", m.ws.Path, r), func() (bool, string) {
				o, err := f.get(f.down, r.gvr, r.namespace, r.name)
				if apierrors.IsNotFound(err) {
					return true, ""
				}
				if err != nil {
					return false, err.Error()
				}
				return false, fmt.Sprintf("still there (deletionTimestamp %v)", o.GetDeletionTimestamp())
			})
		}
	}

	// c unbinds while the syncer runs: its objects leave the edge, a's and b's stay.
	if err := bed.Unbind(f.ctx, c.ws); err != nil {
		t.Fatal(err)
	}
	gone(c)
	gauge(p, 2)
	intact(a)
	intact(b)
	if ok, msg := sharedIsA(); !ok {
		t.Errorf("shared-role after c unbound: %s", msg)
	}

	// b unbinds while the syncer is stopped: the restarted syncer finds b's objects by their marks and
	// deletes them; a's shared-role, which b lost, stays a's.
	p.stop()
	if err := bed.Unbind(f.ctx, b.ws); err != nil {
		t.Fatal(err)
	}
	p = start()
	gone(b)
	gauge(p, 1)
	intact(a)
	if ok, msg := sharedIsA(); !ok {
		t.Errorf("shared-role after b unbound: %s", msg)
	}
	if o, err := f.get(f.down, gvrConfigMaps, a.shop, "app"); err != nil {
		t.Error(err)
	} else if ok, msg := dataEquals("from", a.ws.Name)(o); !ok {
		t.Errorf("a's edge copy at the end: %s", msg)
	}
}

// TestManyMailboxesBootstrapped: syncer-gen --apiexport-endpoint-slice, pointed at the provider
// workspace, makes the identity and manifest of a syncer that serves every bound workspace: run as
// a Pod at the edge with only that identity, it syncs each workspace's objects into the workspace's
// own edge namespace and writes its heartbeat on each workspace's SyncerConfig.
func TestManyMailboxesBootstrapped(t *testing.T) {
	if !upstreamIsKCP() {
		support.SkipBecause(t, skipUnlessKCPExport)
	}
	t.Parallel()
	f := newFixture(t)
	bed, err := env.SetUpKCPExport(f.ctx, testenv.KCPExportOptions{Prefix: "mwgen", Mailboxes: 2})
	if err != nil {
		t.Fatal(err)
	}
	var boxes []clients
	for _, ws := range bed.Mailboxes {
		c := workspaceClients(t, ws)
		boxes = append(boxes, c)
		f.create(c, gvrNamespaces, obj("v1", "Namespace", "", "shop", nil))
		f.create(c, gvrConfigMaps, configMap("shop", "app", map[string]interface{}{"from": ws.Name}))
		f.create(c, gvrSyncerConfig, obj("edge.kubestellar.io/v2alpha1", "SyncerConfig", "", "mailbox",
			map[string]interface{}{"spec": nsScope([]string{"shop"}, resource("", "v1", "configmaps"))}))
		shop := mapping.WorkspaceNamespace(ws.Cluster, "shop")
		t.Cleanup(func() {
			_ = f.down.dyn.Resource(gvrNamespaces).Delete(context.Background(), shop, metav1.DeleteOptions{})
		})
	}
	provider, err := bed.Provider.Server()
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := bootstrapPodAt(t, f, provider, func() clients { return mustClients(provider) }, f.name, bootstrap.RBACBroad, "--apiexport-endpoint-slice="+bed.Export.Name)

	// The identity may read its slice in the provider workspace, and not what else is there.
	token := bootstrapToken(t, f, id).Value
	as := kubernetes.NewForConfigOrDie(provider.TokenConfig(token))
	if _, err := as.CoreV1().Secrets("default").List(f.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the syncer's identity listing Secrets in the provider workspace: %v, want Forbidden", err)
	}
	if _, err := dynamic.NewForConfigOrDie(provider.TokenConfig(token)).Resource(wellknown.EndpointSlices).
		Get(f.ctx, bed.Export.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the syncer's identity reading its APIExportEndpointSlice: %v", err)
	}

	for i, ws := range bed.Mailboxes {
		f.waitFor(f.down, gvrConfigMaps, mapping.WorkspaceNamespace(ws.Cluster, "shop"), "app", dataEquals("from", ws.Name))
		f.waitFor(boxes[i], gvrSyncerConfig, "", "mailbox", func(o *unstructured.Unstructured) (bool, string) {
			status, reason, message := conditionOf(o, "Ready")
			return status == "True", fmt.Sprintf("%s: Ready %s %s: %s", ws.Path, status, reason, message)
		})
	}
}
