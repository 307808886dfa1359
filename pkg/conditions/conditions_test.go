package conditions

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/syncer/pkg/credential"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/report"
)

func TestBoundedMessage(t *testing.T) {
	var items []string
	for i := 0; i < 1000; i++ {
		items = append(items, fmt.Sprintf("configmaps ns/o%04d: %s", i, strings.Repeat("refused ", 40)))
	}
	msg := Bounded(items, len(items))
	if len(msg) > MaxMessageLen {
		t.Errorf("message of %d characters", len(msg))
	}
	if !strings.Contains(msg, "o0000") {
		t.Errorf("first example missing: %q", msg[:80])
	}
	if short := Bounded(items[:2], 1000); !strings.HasSuffix(short, "and 998 more") {
		t.Errorf("count of the rest missing: %q", short)
	}
}

type sources struct {
	selection          []problem.Problem
	failing, conflicts int
	reachable          bool
	held               int
	report             *report.Summary
	credential         credential.State
	// fenceRequired: the syncer writes through a fence; fenceMissing: it is not proven.
	fenceRequired, fenceMissing bool
}

func (s sources) Credential() credential.State { return s.credential }

func (s sources) Report(int) *report.Summary { return s.report }

func (s sources) Fence() (bool, bool, string) {
	return s.fenceRequired, !s.fenceMissing, "the policy is missing"
}

func (s sources) ReleaseHow(count string) string {
	return "kubectl -n edge annotate --overwrite configmap kubestellar-syncer-release edge.kubestellar.io/release-deletions=" + count
}

func (s sources) DeletionsHeld(limit int) (bool, time.Time, int, []string) {
	var ex []string
	for i := 0; i < s.held && i < limit; i++ {
		ex = append(ex, fmt.Sprintf("configmaps ns/c%03d", i))
	}
	return s.held > 0, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), s.held, ex
}

func (s sources) SelectionProblems() []problem.Problem { return s.selection }
func (s sources) ObjectProblems(limit int) (int, int, []problem.Problem) {
	var ex []problem.Problem
	for i := 0; i < s.failing+s.conflicts && i < limit; i++ {
		ex = append(ex, problem.Problem{Kind: problem.Conflict, Resource: schema.GroupResource{Resource: "configmaps"}, Object: fmt.Sprintf("ns/c%03d", i), Reason: "in conflict"})
	}
	return s.failing, s.conflicts, ex
}
func (s sources) Reachability(string) (bool, string, time.Time) {
	return s.reachable, "dial tcp: refused", time.Unix(0, 0)
}

// TestProblemsGoToTheirConfig: a selection problem shows on the config it comes from (and problems of
// no config on all), never on another; Ready follows the others.
func TestProblemsGoToTheirConfig(t *testing.T) {
	src := sources{reachable: true, selection: []problem.Problem{
		{Kind: problem.UnknownResource, Config: "a", Field: "clusterScope[0]", Resource: schema.GroupResource{Resource: "nosuchthings"}, Reason: `resource "nosuchthings" is not served upstream`},
	}}
	shared := Shared(src)
	a := ForConfig(problem.SyncerConfig, "a", 3, src.SelectionProblems(), shared)
	b := ForConfig(problem.SyncerConfig, "b", 1, src.SelectionProblems(), shared)
	if c := meta.FindStatusCondition(a, SelectionValid); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "nosuchthings") {
		t.Errorf("config a: %+v", c)
	}
	if !meta.IsStatusConditionFalse(a, Ready) || a[0].Type != Ready || a[0].ObservedGeneration != 3 {
		t.Errorf("config a Ready: %+v", a[0])
	}
	if !meta.IsStatusConditionTrue(b, SelectionValid) || !meta.IsStatusConditionTrue(b, Ready) {
		t.Errorf("config b got a's problem: %+v", b)
	}
	down := Shared(sources{reachable: false, conflicts: 120})
	if c := meta.FindStatusCondition(down, ObjectsSynced); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "120 conflicts") || len(c.Message) > MaxMessageLen {
		t.Errorf("ObjectsSynced: %+v", c)
	}
	if !meta.IsStatusConditionFalse(down, UpstreamReachable) {
		t.Errorf("reachability: %+v", down)
	}
}

// TestStatusApplyKeepsTransitionTimes: a condition whose status holds keeps its lastTransitionTime;
// one that flips gets the time of this beat.
func TestStatusApplyKeepsTransitionTimes(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	cfg := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncerConfig",
		"metadata": map[string]interface{}{"name": "a", "generation": int64(2)}}}
	var old []interface{}
	for _, c := range []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionTrue, Reason: "Syncing", LastTransitionTime: then},
		{Type: SelectionValid, Status: metav1.ConditionTrue, Reason: "Resolved", LastTransitionTime: then},
	} {
		m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		old = append(old, m)
	}
	_ = unstructured.SetNestedSlice(cfg.Object, old, "status", "conditions")
	body := StatusApply(cfg, "", []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionFalse, Reason: "SelectionProblems", ObservedGeneration: 2},
		{Type: SelectionValid, Status: metav1.ConditionTrue, Reason: "Resolved", ObservedGeneration: 2},
	}, now, time.Minute)
	raw, _, _ := unstructured.NestedSlice(body.Object, "status", "conditions")
	got := map[string]metav1.Condition{}
	for _, r := range raw {
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.(map[string]interface{}), &c); err != nil {
			t.Fatal(err)
		}
		got[c.Type] = c
	}
	if rt, st := got[Ready].LastTransitionTime, got[SelectionValid].LastTransitionTime; !rt.Equal(&now) || !st.Equal(&then) {
		t.Errorf("transition times: Ready %v (want %v), SelectionValid %v (want %v)", got[Ready].LastTransitionTime, now, got[SelectionValid].LastTransitionTime, then)
	}
	if got[Ready].ObservedGeneration != 2 || body.GetName() != "a" || body.GetKind() != "SyncerConfig" {
		t.Errorf("body: %v", body.Object)
	}
	if hb, _, _ := unstructured.NestedString(body.Object, "status", "lastSyncerHeartbeatTime"); hb != "2026-01-02T00:00:00Z" {
		t.Errorf("heartbeat %q", hb)
	}
}

// TestWarningsDoNotBreakReady: warnings show in SelectionValid (True, ResolvedWithWarnings) and leave
// Ready True; with an error beside them, both are listed and Ready is False.
func TestWarningsDoNotBreakReady(t *testing.T) {
	shared := Shared(sources{reachable: true})
	warn := problem.Problem{Kind: problem.EmptyConfig, Config: "a", Reason: "selects nothing"}
	conds := ForConfig(problem.SyncerConfig, "a", 1, []problem.Problem{warn}, shared)
	if c := meta.FindStatusCondition(conds, SelectionValid); c.Status != metav1.ConditionTrue || c.Reason != "ResolvedWithWarnings" || !strings.Contains(c.Message, "warning: SyncerConfig a: selects nothing") {
		t.Errorf("SelectionValid %+v", c)
	}
	if !meta.IsStatusConditionTrue(conds, Ready) {
		t.Error("a warning turned Ready False")
	}
	broken := problem.Problem{Kind: problem.UnknownResource, Config: "a", Reason: `resource "x" is not served upstream`}
	conds = ForConfig(problem.SyncerConfig, "a", 1, []problem.Problem{warn, broken}, shared)
	if c := meta.FindStatusCondition(conds, SelectionValid); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "not served") || !strings.Contains(c.Message, "selects nothing") {
		t.Errorf("SelectionValid %+v", c)
	}
	if meta.IsStatusConditionTrue(conds, Ready) {
		t.Error("Ready True with an error")
	}
}

// TestUpstreamCredential: no condition without a token's expiry; True while the token is renewed
// (saying when), not renewed (saying why), or its renewal is retried; False, with the error and the
// expiry, once less than a quarter of its life is left, and Ready with it.
func TestUpstreamCredential(t *testing.T) {
	expires := time.Date(2026, 12, 27, 12, 0, 0, 0, time.UTC)
	sa := types.NamespacedName{Namespace: "default", Name: "kbs-syncer"}
	if c := meta.FindStatusCondition(Shared(sources{reachable: true}), UpstreamCredential); c != nil {
		t.Errorf("a condition without a token: %+v", c)
	}
	for name, tc := range map[string]struct {
		st     credential.State
		status metav1.ConditionStatus
		reason string
		says   []string
	}{
		"renewed": {credential.State{ServiceAccount: sa, Expires: expires, RenewAt: expires.Add(-15 * 24 * time.Hour)}, metav1.ConditionTrue, "Renewed",
			[]string{"default/kbs-syncer", "2026-12-27T12:00:00Z", "2026-12-12T12:00:00Z"}},
		"not renewed": {credential.State{ServiceAccount: sa, Expires: expires, NotRenewed: "--upstream-token-secret is not set"}, metav1.ConditionTrue, "NotRenewed",
			[]string{"2026-12-27T12:00:00Z", "--upstream-token-secret is not set"}},
		"retrying": {credential.State{ServiceAccount: sa, Expires: expires, RenewAt: expires.Add(-15 * 24 * time.Hour), Failure: "connection refused",
			FailingSince: expires.Add(-15 * 24 * time.Hour)}, metav1.ConditionTrue, "RenewalRetrying",
			[]string{"connection refused", "since 2026-12-12T12:00:00Z", "keeps trying"}},
		"failing": {credential.State{ServiceAccount: sa, Expires: expires, RenewAt: expires.Add(-time.Hour), Failure: "serviceaccounts \"kbs-syncer\" is forbidden",
			FailingSince: expires.Add(-time.Hour), Urgent: true}, metav1.ConditionFalse, "RenewalFailing",
			[]string{"forbidden", "since 2026-12-27T11:00:00Z", "expires at 2026-12-27T12:00:00Z", "bootstrap it again"}},
		"not renewed, soon expired": {credential.State{ServiceAccount: sa, Expires: expires, NotRenewed: "--upstream-token-secret is not set", Urgent: true},
			metav1.ConditionFalse, "ExpiresSoon", []string{"2026-12-27T12:00:00Z", "Bootstrap the syncer again"}},
	} {
		conds := ForConfig(problem.SyncerConfig, "a", 1, nil, Shared(sources{reachable: true, credential: tc.st}))
		c := meta.FindStatusCondition(conds, UpstreamCredential)
		if c == nil || c.Status != tc.status || c.Reason != tc.reason {
			t.Errorf("%s: %+v", name, c)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(c.Message, s) {
				t.Errorf("%s: message %q does not say %q", name, c.Message, s)
			}
		}
		if ready := meta.IsStatusConditionTrue(conds, Ready); ready != (tc.status == metav1.ConditionTrue) {
			t.Errorf("%s: Ready %v", name, ready)
		}
	}
}
