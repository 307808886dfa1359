package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/mapping"
)

var (
	gvrVAPs        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	gvrVAPBindings = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

// badInput is one case of TestBadInputTable: its own fixture (namespaces, SyncerConfig), the one
// syncer all cases share, and what the case began with.
type badInput struct {
	*fixture
	p       *syncerProc
	config  string             // the case's SyncerConfig
	ns      string             // the case's namespace, made upstream before setup
	canary  string             // the namespace the healthy SyncerConfig selects
	healthy string             // the healthy SyncerConfig
	before  map[string]float64 // the syncer's metrics when the case began
}

// badInputCase is one row of the table.
type badInputCase struct {
	name string
	// setup makes the bad input: objects on either side, and the SyncerConfig c.config.
	setup func(c *badInput)
	// check looks for the problem where docs/operations.md says it shows.
	check func(c *badInput)
	// fix removes the problem and checks it is gone. nil: c.fixConfig, which replaces the case's
	// config by a good one.
	fix func(c *badInput)
}

// wantCond is what a condition of a SyncerConfig must be; empty fields match anything.
type wantCond struct{ typ, status, reason, contains string }

// TestBadInputTable: one syncer, started once, meets one bad input after another. For each, it stays
// alive (no panic, no data race), a healthy SyncerConfig's new object still arrives at the edge, and
// the problem shows where the "Faults and bad input" table of docs/operations.md says (conditions on the case's
// SyncerConfig, Events on the upstream object, the log, the metrics); the problem goes once the
// input is fixed or its config deleted.
//
// The syncer runs at -v=0, so every log line a case finds was logged at level 0, as docs/operations.md promises.
func TestBadInputTable(t *testing.T) {
	f := newFixture(t)
	canaryNS := f.namespace("canary")
	canaryConfig := f.name + "-canary"
	f.syncerConfig(canaryConfig, nsScope([]string{canaryNS}, resource("", "v1", "configmaps")))
	p := f.startSyncer(withArgs("--heartbeat-period=500ms", "--conflict-recheck-period=2s", "-v=0"))
	start := time.Now()

	cases := []badInputCase{
		{
			name: "unknown-resource",
			setup: func(c *badInput) {
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("example.com", "v1", "doesnotexist")))
			},
			check: func(c *badInput) {
				want := `namespaceScope.resources[0]: resource "doesnotexist.example.com" is not served upstream (yet): no CRD or APIBinding provides it there`
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems", contains: want},
					wantCond{typ: "Ready", status: "False", reason: "SelectionProblems"})
				c.expectLog("the problem in the log", `"Selection problem"`, `syncerConfig="`+c.config+`"`, `resource \"doesnotexist.example.com\" is not served upstream`)
			},
		},
		{
			name: "kind-name",
			setup: func(c *badInput) {
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("", "v1", "configmap"), resource("", "v1", "ConfigMap")))
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems",
						contains: `resources[0]: resource "configmap" is not served upstream; did you mean "configmaps"`},
					wantCond{typ: "SelectionValid", status: "False",
						contains: `resources[1]: resource "ConfigMap" is not served upstream; did you mean "configmaps"`},
					wantCond{typ: "Ready", status: "False"})
				c.expectLog("the problem in the log", `"Selection problem"`, `syncerConfig="`+c.config+`"`, `did you mean \"configmaps\"`)
			},
		},
		{
			name: "wrong-scope",
			setup: func(c *badInput) {
				spec := nsScope([]string{c.ns}, resource("rbac.authorization.k8s.io", "v1", "clusterroles"))
				spec["clusterScope"] = []interface{}{resource("", "v1", "configmaps")} // objects omitted: all
				c.syncerConfig(c.config, spec)
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems",
						contains: `namespaceScope.resources[0]: resource "clusterroles.rbac.authorization.k8s.io" is cluster-scoped, but is listed with namespaced resources`},
					wantCond{typ: "SelectionValid", status: "False",
						contains: `clusterScope[0]: resource "configmaps" is namespaced, but is listed with cluster-scoped resources`},
					wantCond{typ: "Ready", status: "False"})
				c.expectLog("the problem in the log", `"Selection problem"`, `kind="WrongScope"`, `syncerConfig="`+c.config+`"`)
			},
		},
		{
			name: "empty-spec",
			setup: func(c *badInput) {
				c.syncerConfig(c.config, map[string]interface{}{})
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "True", reason: "ResolvedWithWarnings",
						contains: "warning: SyncerConfig " + c.config + ": selects nothing"},
					wantCond{typ: "Ready", status: "True", reason: "Syncing"})
				c.expectLog("the warning in the log", `"Selection warning"`, `kind="EmptyConfig"`, `syncerConfig="`+c.config+`"`)
			},
		},
		{
			name: "missing-namespace",
			setup: func(c *badInput) {
				c.syncerConfig(c.config, nsScope([]string{c.name + "-absent"}, resource("", "v1", "configmaps")))
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "True", reason: "ResolvedWithWarnings",
						contains: fmt.Sprintf(`namespaceScope.namespaces: namespace %q does not exist upstream`, c.name+"-absent")},
					wantCond{typ: "Ready", status: "True", reason: "Syncing"})
				c.expectLog(`a "Selection warning" log line naming the missing namespace, as the "Faults and bad input" table of docs/operations.md promises`,
					`"Selection warning"`, `syncerConfig="`+c.config+`"`, c.name+`-absent`)
			},
			fix: func(c *badInput) {
				// The namespace appears upstream: the warning goes without any change to the config.
				late := c.namespace("absent")
				c.create(c.up, gvrConfigMaps, configMap(late, "fixed", map[string]interface{}{"k": "v"}))
				c.waitFor(c.down, gvrConfigMaps, late, "fixed", hasMark)
				c.expectConditions(c.config, wantCond{typ: "SelectionValid", status: "True", reason: "Resolved"},
					wantCond{typ: "Ready", status: "True"})
			},
		},
		{
			name: "unserved-version",
			setup: func(c *badInput) {
				c.create(c.up, gvrDeployments, deployment(c.ns, "web", 0))
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("apps", "v1beta9", "deployments")))
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "True", reason: "ResolvedWithWarnings",
						contains: `resource "deployments.apps" is not served upstream at version v1beta9; using v1`},
					wantCond{typ: "Ready", status: "True"})
				c.expectLog("the warning in the log", `"Selection warning"`, `kind="VersionFallback"`, `syncerConfig="`+c.config+`"`)
				// It syncs what it can: at the version that is served.
				c.waitFor(c.down, gvrDeployments, c.ns, "web", hasMark)
			},
		},
		{
			name: "retained-field-path",
			setup: func(c *badInput) {
				c.create(c.up, gvrConfigMaps, configMap(c.ns, "kept", map[string]interface{}{"mode": "up"}))
				r := resource("", "v1", "configmaps")
				r["retainFields"] = []interface{}{"data..mode"}
				c.syncerConfig(c.config, nsScope([]string{c.ns}, r))
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems",
						contains: `namespaceScope.resources[0]: retainFields: "data..mode" is not a field path: an empty field name; the syncer applies that field`},
					wantCond{typ: "Ready", status: "False"})
				c.expectLog("the problem in the log", `"Selection problem"`, `kind="InvalidConfig"`, `syncerConfig="`+c.config+`"`, `retainFields`)
				// The entry still selects: its objects sync, the field applied.
				c.waitFor(c.down, gvrConfigMaps, c.ns, "kept", dataEquals("mode", "up"))
			},
		},
		{
			name: "malformed-version",
			setup: func(c *badInput) {
				c.create(c.up, gvrDeployments, deployment(c.ns, "web", 0))
				c.create(c.up, gvrConfigMaps, configMap(c.ns, "beside", map[string]interface{}{"k": "v"}))
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("apps", "apps/v1", "deployments"), resource("", "v1", "configmaps")))
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems",
						contains: `namespaceScope.resources[0]: apiVersion "apps/v1" is not a version`},
					wantCond{typ: "Ready", status: "False"})
				c.expectLog("the problem in the log", `"Selection problem"`, `kind="InvalidConfig"`, `syncerConfig="`+c.config+`"`, `apiVersion \"apps/v1\" is not a version`)
				// The config's other entry syncs; the malformed one does not.
				c.waitFor(c.down, gvrConfigMaps, c.ns, "beside", hasMark)
				if _, err := c.get(c.down, gvrDeployments, c.ns, "web"); err == nil {
					c.t.Error("the Deployment of the malformed entry was synced")
				}
			},
		},
		{
			name: "unserved-version-wildcard",
			setup: func(c *badInput) {
				c.create(c.up, gvrDeployments, deployment(c.ns, "web", 0))
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("apps", "v1beta9", "*")))
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "True", reason: "ResolvedWithWarnings",
						contains: `group "apps" is not served upstream at version v1beta9; using v1`},
					wantCond{typ: "Ready", status: "True"})
				c.expectLog("the warning in the log", `"Selection warning"`, `kind="VersionFallback"`, `syncerConfig="`+c.config+`"`)
				c.waitFor(c.down, gvrDeployments, c.ns, "web", hasMark)
			},
		},
		{
			name: "edge-refuses",
			setup: func(c *badInput) {
				refused := c.name + "-refused"
				c.denyAtEdge(c.name, "", []string{"configmaps"}, fmt.Sprintf("object.metadata.name != '%s'", refused),
					gvrConfigMaps, configMap("default", refused, nil))
				c.create(c.up, gvrConfigMaps, configMap(c.ns, refused, map[string]interface{}{"k": "v"}))
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("", "v1", "configmaps")))
			},
			check: func(c *badInput) {
				refused := c.name + "-refused"
				key := "configmaps " + c.ns + "/" + refused
				c.expectEvent(c.ns, refused, "ApplyFailed", "refused by the edge's policy")
				c.expectConditions(c.config,
					wantCond{typ: "ObjectsSynced", status: "False", reason: "SyncFailures", contains: key + ": applying downstream"},
					wantCond{typ: "Ready", status: "False"})
				c.expectCounterGrows(`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="error"}`)
				if c.expectLog("the refusal in the log", `"Sync failed; will retry"`, `key="`+key+`"`, "refused by the edge's policy") {
					// Once at level 0; the retries that fail the same way are logged at -v=4 only.
					if lines := c.logLines(`"Sync failed; will retry"`, `key="`+key+`"`); len(lines) != 1 {
						c.t.Errorf("the refusal is logged %d times at level 0, want once:\n%s", len(lines), strings.Join(lines, "\n"))
					}
				}
			},
			fix: func(c *badInput) {
				// An operator fixes the edge: the object arrives with no upstream change.
				c.delete(c.down, gvrVAPBindings, "", c.name)
				c.waitFor(c.down, gvrConfigMaps, c.ns, c.name+"-refused", hasMark)
				c.expectConditions(c.config, wantCond{typ: "ObjectsSynced", status: "True"}, wantCond{typ: "Ready", status: "True"})
			},
		},
		{
			name: "unowned-at-edge",
			setup: func(c *badInput) {
				c.create(c.down, gvrNamespaces, obj("v1", "Namespace", "", c.ns, nil)) // the edge's own
				c.create(c.down, gvrConfigMaps, configMap(c.ns, "theirs", map[string]interface{}{"from": "edge"}))
				c.create(c.up, gvrConfigMaps, configMap(c.ns, "theirs", map[string]interface{}{"from": "upstream"}))
				c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("", "v1", "configmaps")))
			},
			check: func(c *badInput) {
				key := "configmaps " + c.ns + "/theirs"
				c.expectEvent(c.ns, "theirs", "Conflict", "without the syncer's mark")
				c.expectConditions(c.config,
					wantCond{typ: "ObjectsSynced", status: "False", reason: "SyncFailures",
						contains: key + ": in conflict with an object the syncer does not own"},
					wantCond{typ: "Ready", status: "False"})
				c.expectCounterGrows(`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="conflict"}`)
				if c.expectLog("the conflict in the log", key+` exists downstream without the syncer's mark`) {
					// Looked at again every --conflict-recheck-period (2s here), logged once at level 0.
					c.expectCounterGrows(`kubestellar_syncer_writes_total{direction="downsync",resource="configmaps",result="conflict"}`)
					if lines := c.logLines(key + ` exists downstream without the syncer's mark`); len(lines) != 1 {
						c.t.Errorf("the conflict is logged %d times at level 0, want once:\n%s", len(lines), strings.Join(lines, "\n"))
					}
				}
			},
			fix: func(c *badInput) {
				// Deleting the config clears the conflict; the unowned object is left as it was.
				c.delete(c.up, gvrSyncerConfig, "", c.config)
				c.expectConditions(c.healthy, wantCond{typ: "ObjectsSynced", status: "True"}, wantCond{typ: "Ready", status: "True"})
				if o, err := c.get(c.down, gvrConfigMaps, c.ns, "theirs"); err != nil {
					c.t.Errorf("the unowned edge object: %v", err)
				} else if ok, msg := dataEquals("from", "edge")(o); !ok {
					c.t.Errorf("the unowned edge object was overwritten: %s", msg)
				}
			},
		},
		{
			// What the CRD's schema admits but the syncer cannot use: entries without a resource or a
			// namespace; and a name with "*" in it, which is no pattern (only "*" alone is a wildcard).
			name: "malformed-entries",
			setup: func(c *badInput) {
				for _, n := range []string{"exact", "ax"} {
					c.create(c.up, gvrConfigMaps, configMap(c.ns, n, map[string]interface{}{"k": "v"}))
				}
				c.syncerConfig(c.config, map[string]interface{}{
					"namespaceScope": map[string]interface{}{"namespaces": []interface{}{c.ns}, "resources": []interface{}{resource("", "v1", "")}},
					"namespacedObjects": []interface{}{map[string]interface{}{
						"group": "", "apiVersion": "v1", "resource": "configmaps",
						"objectsByNamespace": []interface{}{
							map[string]interface{}{"namespace": "", "names": []interface{}{"exact"}},
							map[string]interface{}{"namespace": c.ns, "names": []interface{}{"*x", "exact"}},
						},
					}},
					"clusterScope": []interface{}{resource("rbac.authorization.k8s.io", "v1", "")},
				})
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems", contains: "namespaceScope.resources[0]: resource and kind are empty"},
					wantCond{typ: "SelectionValid", status: "False", contains: "namespacedObjects[0]: objectsByNamespace entry without namespace"},
					wantCond{typ: "SelectionValid", status: "False", contains: "clusterScope[0]: resource and kind are empty"},
					wantCond{typ: "Ready", status: "False"})
				c.expectLog("the problems in the log", `"Selection problem"`, `kind="InvalidConfig"`, `syncerConfig="`+c.config+`"`)
				// The rest of the config still counts.
				c.waitFor(c.down, gvrConfigMaps, c.ns, "exact", hasMark)
				// Quiet window: "*x" is a name, not a pattern; "ax" (processed with "exact") stays upstream.
				consistently(c.t, time.Second, `"ax" not selected by "*x"`, func() (bool, string) {
					_, err := c.get(c.down, gvrConfigMaps, c.ns, "ax")
					return apierrors.IsNotFound(err), fmt.Sprintf("ax at the edge (%v)", err)
				})
			},
		},
		{
			name: "huge-and-long",
			setup: func(c *badInput) {
				names := make([]interface{}, 0, 10001)
				for i := 0; i < 10000; i++ {
					names = append(names, fmt.Sprintf("n-%05d", i))
				}
				long := longName()
				names = append(names, long)
				missing := make([]interface{}, 300)
				for i := range missing {
					missing[i] = fmt.Sprintf("%s-gone-%03d", c.name, i)
				}
				c.create(c.up, gvrConfigMaps, configMap(c.ns, "n-09999", map[string]interface{}{"k": "v"}))
				c.create(c.up, gvrConfigMaps, configMap(c.ns, long, map[string]interface{}{"k": "v"}))
				c.syncerConfig(c.config, map[string]interface{}{
					"namespaceScope": map[string]interface{}{"namespaces": missing, "resources": []interface{}{resource("", "v1", "configmaps")}},
					"namespacedObjects": []interface{}{map[string]interface{}{
						"group": "", "apiVersion": "v1", "resource": "configmaps",
						"objectsByNamespace": []interface{}{map[string]interface{}{"namespace": c.ns, "names": names}},
					}},
				})
			},
			check: func(c *badInput) {
				c.waitFor(c.down, gvrConfigMaps, c.ns, "n-09999", hasMark)
				c.waitFor(c.down, gvrConfigMaps, c.ns, longName(), hasMark)
				cfg := c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "True", reason: "ResolvedWithWarnings", contains: "; and 295 more"},
					wantCond{typ: "Ready", status: "True"})
				if _, _, msg := conditionOf(cfg, "SelectionValid"); len(msg) > 1024 {
					c.t.Errorf("SelectionValid message is %d characters, want at most 1 KiB", len(msg))
				}
			},
		},
		{
			name: "upsync-unknown-and-crd",
			setup: func(c *badInput) {
				c.syncerConfig(c.config, map[string]interface{}{"upsync": []interface{}{
					map[string]interface{}{"apiGroup": "example.com", "resources": []interface{}{"nosuchthings"},
						"namespaces": []interface{}{c.ns}, "names": []interface{}{"*"}},
					map[string]interface{}{"apiGroup": "apiextensions.k8s.io", "resources": []interface{}{"customresourcedefinitions"},
						"names": []interface{}{"*"}},
				}})
			},
			check: func(c *badInput) {
				c.expectConditions(c.config,
					wantCond{typ: "SelectionValid", status: "False", reason: "SelectionProblems", contains: `upsync[0]: resource "nosuchthings" is not served at the edge`},
					wantCond{typ: "SelectionValid", status: "False", contains: "upsync[1]: upsyncing CustomResourceDefinitions is not supported"},
					wantCond{typ: "Ready", status: "False"})
				c.expectLog("the problems in the log", `"Selection problem"`, `kind="Unsupported"`, `syncerConfig="`+c.config+`"`)
			},
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &badInput{fixture: newFixture(t), p: p, canary: canaryNS, healthy: canaryConfig}
			c.config = c.name
			// Begin clean: the healthy config is Ready, so nothing is left over from the case before.
			c.expectConditions(c.healthy, wantCond{typ: "Ready", status: "True"})
			if t.Failed() {
				t.FailNow()
			}
			c.ns = c.namespace("ns")
			c.before = c.metrics()
			tc.setup(c)

			// (a) The syncer lives on, having seen the bad input.
			c.seen()
			c.alive()
			// (b) A healthy config's object made after the bad input still arrives.
			canary := "canary-" + tc.name
			c.create(c.up, gvrConfigMaps, configMap(c.canary, canary, map[string]interface{}{"k": "v"}))
			c.waitFor(c.down, gvrConfigMaps, c.canary, canary, hasMark)
			// (c) The problem shows where docs/operations.md says.
			tc.check(c)

			if tc.fix != nil {
				tc.fix(c)
			} else {
				c.fixConfig()
			}
			c.deleteConfig()
			c.alive()
		})
	}
	t.Logf("%d bad-input cases took %.1fs after the syncer started", len(cases), time.Since(start).Seconds())
}

// longName is a ConfigMap name of the greatest length allowed (253 characters).
func longName() string {
	return "long-" + strings.Repeat("abcdefghij", 24) + "-1234567"
}

func (c *badInput) metrics() map[string]float64 {
	c.t.Helper()
	m, err := c.p.scrape()
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// alive checks that the syncer runs, serves /healthz, and has logged no panic and no data race.
func (c *badInput) alive() {
	c.t.Helper()
	if c.p.exited() {
		c.t.Fatalf("the syncer exited; its log ends:\n%s", c.p.tail(40))
	}
	if code, body := c.p.probe("/healthz"); code != 200 {
		c.t.Errorf("/healthz = %d %s", code, body)
	}
	log := c.p.logText()
	for _, bad := range []string{"panic", "DATA RACE"} {
		if i := strings.Index(log, bad); i >= 0 {
			from := max(0, i-2000)
			c.t.Fatalf("the syncer's log has %q:\n%s", bad, log[from:min(len(log), i+4000)])
		}
	}
}

// seen waits until the syncer has written conditions on the case's config for its current
// generation: it has read the bad input.
func (c *badInput) seen() {
	c.t.Helper()
	eventually(c.t, 30*time.Second, "conditions on SyncerConfig "+c.config, func() (bool, string) {
		o, err := c.get(c.up, gvrSyncerConfig, "", c.config)
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, cond := range conds {
			if m, ok := cond.(map[string]interface{}); ok && m["observedGeneration"] == o.GetGeneration() {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no condition for generation %d", o.GetGeneration())
	})
}

// expect polls cond for up to 15s; on timeout it reports an error (not fatal: the case goes on, so
// that one run shows every gap) and returns false.
func (c *badInput) expect(what string, cond func() (bool, string)) bool {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, msg := cond()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%s: not seen within 15s: %s", what, msg)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// expectConditions waits until the SyncerConfig's conditions are all as wanted (in one read) and
// returns the config as last read.
func (c *badInput) expectConditions(config string, want ...wantCond) *unstructured.Unstructured {
	c.t.Helper()
	var last *unstructured.Unstructured
	c.expect(fmt.Sprintf("conditions %+v on SyncerConfig %s", want, config), func() (bool, string) {
		o, err := c.get(c.up, gvrSyncerConfig, "", config)
		if err != nil {
			return false, err.Error()
		}
		last = o
		for _, w := range want {
			status, reason, message := conditionOf(o, w.typ)
			if status != w.status || (w.reason != "" && reason != w.reason) || !strings.Contains(message, w.contains) {
				return false, fmt.Sprintf("%s = %s (%s) %q", w.typ, status, reason, message)
			}
		}
		return true, ""
	})
	return last
}

// logLines are the lines of the syncer's log that contain every one of subs.
func (c *badInput) logLines(subs ...string) []string {
	var out []string
	for _, line := range strings.Split(c.p.logText(), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// expectLog waits for a log line that contains every one of subs.
func (c *badInput) expectLog(what string, subs ...string) bool {
	c.t.Helper()
	return c.expect(what, func() (bool, string) {
		return len(c.logLines(subs...)) > 0, fmt.Sprintf("no line with all of %q", subs)
	})
}

// expectEvent waits for a Warning Event from the syncer on an upstream object.
func (c *badInput) expectEvent(namespace, name, reason, contains string) {
	c.t.Helper()
	c.expect(fmt.Sprintf("Warning Event %s on %s/%s", reason, namespace, name), func() (bool, string) {
		events, err := c.up.kube.CoreV1().Events(namespace).List(c.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Type == "Warning" && e.Reason == reason && e.Source.Component == "kubestellar-syncer" && strings.Contains(e.Message, contains) {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s %s %q", e.Type, e.Reason, e.Message))
		}
		return false, fmt.Sprintf("events: %v", seen)
	})
}

// expectCounterGrows waits until a counter is above what it was when the case began (or, called
// again, above what it was at the call before).
func (c *badInput) expectCounterGrows(key string) {
	c.t.Helper()
	from := c.before[key]
	c.expect(key+" to grow", func() (bool, string) {
		now := c.metrics()[key]
		return now > from, fmt.Sprintf("%v, was %v", now, from)
	})
	c.before = c.metrics()
}

// fixConfig replaces the case's config by a good one, and checks that the problem goes: its object
// arrives and SelectionValid and Ready are True again.
func (c *badInput) fixConfig() {
	c.t.Helper()
	c.create(c.up, gvrConfigMaps, configMap(c.ns, "fixed", map[string]interface{}{"k": "v"}))
	c.syncerConfig(c.config, nsScope([]string{c.ns}, resource("", "v1", "configmaps")))
	c.waitFor(c.down, gvrConfigMaps, c.ns, "fixed", hasMark)
	c.expectConditions(c.config, wantCond{typ: "SelectionValid", status: "True", reason: "Resolved"},
		wantCond{typ: "Ready", status: "True", reason: "Syncing"})
}

// deleteConfig deletes the case's config and, when the syncer made the case's namespace at the edge,
// waits until it deletes it.
func (c *badInput) deleteConfig() {
	c.t.Helper()
	c.delete(c.up, gvrSyncerConfig, "", c.config)
	eventually(c.t, 30*time.Second, "the case's namespace to leave the edge", func() (bool, string) {
		o, err := c.get(c.down, gvrNamespaces, "", c.ns)
		switch {
		case apierrors.IsNotFound(err):
			return true, ""
		case err != nil:
			return false, err.Error()
		}
		if o.GetAnnotations()[mapping.DownsyncedAnnotation] == "" || o.GetDeletionTimestamp() != nil {
			return true, "" // not the syncer's, or being deleted
		}
		return false, "still there"
	})
}
