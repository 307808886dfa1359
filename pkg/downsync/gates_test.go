package downsync

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/gate"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/report"
	"github.com/kubestellar/syncer/pkg/selection"
)

// waitingDeletions is a deletion breaker that asks every deletion to wait.
type waitingDeletions struct{}

func (waitingDeletions) Allow(framework.Key, int) (bool, time.Duration, bool) {
	return false, time.Second, false
}
func (waitingDeletions) Forget(framework.Key) {}

// gateCase is one gate given one input: whether it stops the key, and when it is looked at again.
type gateCase struct {
	name       string
	admit      func(*Controller, context.Context, *input) gate.Verdict
	in         func(t *testing.T) *input
	setup      func(c *Controller)
	stop       bool
	after      time.Duration
	err        bool
	afterwards func(t *testing.T, c *Controller, in *input)
}

// inputOf is what gather makes of the fixed ConfigMap key with these objects (either may be nil).
func inputOf(up, down *unstructured.Unstructured) *input {
	in := &input{key: key, r: Resource{Upstream: cmGVR, Downstream: cmGVR, Namespaced: true}, up: up, down: down}
	if up != nil {
		in.sel = selection.ObjectOf(cmGVR.GroupResource(), up)
		in.selected, in.wanted = true, true
	}
	return in
}

// TestGates: each gate alone, on what gather would hand it, as cert-manager tests each check of its
// policy chains. The lists' order is what process applies; each gate says go on or stop (and when the
// key comes back).
func TestGates(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []gateCase{
		{name: "pause: an upstream pause holds", admit: (*Controller).pauseGate,
			in: func(*testing.T) *input { return inputOf(pausedAt(upCM, "2026-11-27T10:00:00Z"), nil) }, stop: true,
			after: mapping.ResumeAfter(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), now)},
		{name: "pause: none", admit: (*Controller).pauseGate, in: func(*testing.T) *input { return inputOf(upCM, nil) }},
		{name: "early: not wanted stops", admit: (*Controller).earlyGate,
			in: func(*testing.T) *input { in := inputOf(upCM, nil); in.early, in.wanted = true, false; return in }, stop: true},
		{name: "early: wanted goes on", admit: (*Controller).earlyGate,
			in: func(*testing.T) *input { in := inputOf(upCM, nil); in.early = true; return in }},
		{name: "namespace: missing at the edge", admit: (*Controller).namespaceGate, in: func(*testing.T) *input { return inputOf(upCM, nil) }, stop: true},
		{name: "namespace: missing, report-only reports the create", admit: (*Controller).namespaceGate,
			in: func(*testing.T) *input { return inputOf(upCM, nil) }, setup: func(c *Controller) { c.cfg.ReportOnly = true }, stop: true,
			afterwards: func(t *testing.T, c *Controller, _ *input) {
				if e := c.cfg.Report.Entries(); len(e) != 1 || e[0].Action != report.Create {
					t.Errorf("report %+v, want a create", e)
				}
			}},
		{name: "size: a stub is withheld", admit: (*Controller).sizeGate,
			in: func(*testing.T) *input { return inputOf(mapping.TooLargeStub(upCM, 70000, 65536), nil) }, stop: true},
		{name: "size: under the limit", admit: (*Controller).sizeGate, in: func(*testing.T) *input { return inputOf(upCM, nil) }},
		{name: "signature: withheld under Enforce", admit: (*Controller).signatureGate, in: func(*testing.T) *input { return inputOf(upCM, nil) },
			setup: func(c *Controller) {
				c.cfg.Signatures = fixedSignatures{err: errors.New("no signature"), enforce: true}
			}, stop: true},
		{name: "signature: the signed object replaces the cache's", admit: (*Controller).signatureGate,
			in: func(*testing.T) *input { return inputOf(upCM, nil) },
			setup: func(c *Controller) {
				signed := upCM.DeepCopy()
				signed.SetLabels(map[string]string{"signed": "yes"})
				c.cfg.Signatures = fixedSignatures{signed: signed}
			},
			afterwards: func(t *testing.T, _ *Controller, in *input) {
				if in.up.GetLabels()["signed"] != "yes" || in.sel.Labels.Get("signed") != "yes" {
					t.Errorf("after the signature: object labels %v, matched as %v; want the signed object's", in.up.GetLabels(), in.sel.Labels)
				}
			}},
		{name: "retain: replicas wait for the autoscalers", admit: (*Controller).retainGate,
			in: func(*testing.T) *input {
				d := u("apps/v1", "Deployment", "a", "x", nil)
				_ = unstructured.SetNestedField(d.Object, int64(2), "spec", "replicas")
				return inputOf(d, nil)
			},
			setup: func(c *Controller) { c.cfg.Autoscalers = unknownAutoscalers{} }, stop: true, after: autoscalersWait},
		{name: "mapping: the object to write", admit: (*Controller).mappingGate, in: func(*testing.T) *input { return inputOf(upCM, nil) },
			afterwards: func(t *testing.T, _ *Controller, in *input) {
				if in.desired == nil || !mapping.OwnedDownstream(in.desired) || in.reportOnly {
					t.Errorf("desired %v, report-only %v", in.desired, in.reportOnly)
				}
			}},
		{name: "drift: not looked at when only reported", admit: (*Controller).driftGate,
			in: func(*testing.T) *input { in := inputOf(upCM, nil); in.reportOnly = true; return in }},
		{name: "served: an API missing upstream holds the edge copy", admit: (*Controller).servedGate,
			in: func(t *testing.T) *input {
				in := inputOf(nil, owned(t, upCM))
				in.r.Upstream = schema.GroupVersionResource{} // selected, not served upstream now
				return in
			}, stop: true},
		{name: "served: held for its count", admit: (*Controller).servedGate,
			in: func(t *testing.T) *input {
				in := inputOf(nil, owned(t, upCM))
				in.r = Resource{Downstream: cmGVR, Held: true}
				return in
			}, stop: true},
		{name: "served: gone upstream", admit: (*Controller).servedGate, in: func(t *testing.T) *input { return inputOf(nil, owned(t, upCM)) }},
		{name: "kept: nothing at the edge", admit: (*Controller).keptGate, in: func(*testing.T) *input { return inputOf(nil, nil) }, stop: true},
		{name: "kept: not the syncer's", admit: (*Controller).keptGate, in: func(*testing.T) *input { return inputOf(nil, unowned) }, stop: true},
		{name: "kept: the syncer's goes", admit: (*Controller).keptGate, in: func(t *testing.T) *input { return inputOf(nil, owned(t, upCM)) }},
		{name: "breaker: held", admit: (*Controller).breakerGate, in: func(t *testing.T) *input { return inputOf(nil, owned(t, upCM)) },
			setup: func(c *Controller) { c.cfg.Deletions = &refusingDeletions{} }, stop: true},
		{name: "breaker: counted with the others due", admit: (*Controller).breakerGate, in: func(t *testing.T) *input { return inputOf(nil, owned(t, upCM)) },
			setup: func(c *Controller) { c.cfg.Deletions = waitingDeletions{} }, stop: true, after: time.Second},
		{name: "breaker: a deletion only reported is not counted", admit: (*Controller).breakerGate,
			in:    func(t *testing.T) *input { in := inputOf(nil, owned(t, upCM)); in.reportOnly = true; return in },
			setup: func(c *Controller) { c.cfg.Deletions = &refusingDeletions{} }},
		{name: "breaker: none", admit: (*Controller).breakerGate, in: func(t *testing.T) *input { return inputOf(nil, owned(t, upCM)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, selecting("a"), nil, nil)
			h.c.cfg.Now = func() time.Time { return now }
			if tc.setup != nil {
				tc.setup(h.c)
			}
			in := tc.in(t)
			in.now = now
			if in.up != nil {
				in.policy = h.c.cfg.Selection.PolicyOf(in.sel, now)
			}
			in.reportOnly = in.reportOnly || h.c.cfg.ReportOnly || in.policy.ReportOnly // as gather says
			v := tc.admit(h.c, ctx, in)
			if v.Stop != tc.stop || v.After != tc.after || (v.Err != nil) != tc.err {
				t.Errorf("verdict %+v, want stop %v after %v error %v", v, tc.stop, tc.after, tc.err)
			}
			if tc.afterwards != nil {
				tc.afterwards(t, h.c, in)
			}
		})
	}
}

// fixedSignatures verifies every object as signed, or none with err.
type fixedSignatures struct {
	signed  *unstructured.Unstructured
	err     error
	enforce bool
}

func (f fixedSignatures) Verify(*unstructured.Unstructured, string, int64) (*unstructured.Unstructured, string, error) {
	return f.signed, "k", f.err
}
func (f fixedSignatures) Enforce() bool { return f.enforce }

// unknownAutoscalers has not listed the edge's autoscalers yet.
type unknownAutoscalers struct{}

func (unknownAutoscalers) Scales(schema.GroupKind, string, string) (bool, bool) { return false, false }

// TestGateLists: every gate has a name and a function and is listed once; the chains hold the
// policies in the order gates.go gives (logged).
func TestGateLists(t *testing.T) {
	h := newHarness(t, selecting("a"), nil, nil)
	seen := map[string]bool{}
	for _, ch := range []gate.Chain[*input]{h.c.gates.key, h.c.gates.write, h.c.gates.delete} {
		for _, g := range ch {
			if g.Admit == nil || g.Name == "" {
				t.Errorf("gate %q without a name or a function", g.Name)
			}
			if seen[g.Name] {
				t.Errorf("gate %q listed twice", g.Name)
			}
			seen[g.Name] = true
		}
		t.Logf("%v", ch.Names())
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range seen {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("gate %q is not in docs/architecture.md's object path", name)
		}
	}
}

// TestGateVerdictCounted: the gate that stops a key is counted by name and verdict; the gates it
// passed are not.
func TestGateVerdictCounted(t *testing.T) {
	h := newHarness(t, selecting("a"), objs(pausedAt(upCM, "2026-11-27T10:00:00Z"), nsA), objs(nsA))
	h.c.cfg.Now = func() time.Time { return time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC) }
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	h.c.cfg.Now = func() time.Time { return time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC) } // the pause is over
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	count := func(gate, verdict string) float64 {
		return testutil.ToFloat64(h.m.GateVerdicts.WithLabelValues("downsync", gate, verdict))
	}
	if count("pause", "wait") != 1 || count("pause", "hold") != 0 || count("namespace", "hold") != 0 {
		t.Errorf("verdicts: pause wait %v, pause hold %v, namespace hold %v; want the one pause counted", count("pause", "wait"),
			count("pause", "hold"), count("namespace", "hold"))
	}
	if len(h.actions()) == 0 {
		t.Error("nothing written once the pause was over")
	}
}

// TestReportOnlyIsTheExecutor: in report-only mode the gates run as ever and the executor reports
// instead of writing: a deletion due is reported, not made, and not counted by the breaker; an object
// missing at the edge is reported as a create.
func TestReportOnlyIsTheExecutor(t *testing.T) {
	other := u("v1", "ConfigMap", "a", "y", map[string]interface{}{"k": "v"})
	h := newHarness(t, selecting("a"), objs(other, nsA), objs(nsA, owned(t, upCM)))
	breaker := &refusingDeletions{}
	h.c.cfg.ReportOnly, h.c.cfg.Deletions = true, breaker
	for _, k := range []framework.Key{key, {GVR: cmGVR, Namespace: "a", Name: "y"}} {
		if _, err := h.c.process(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range h.actions() {
		if a != "get configmaps" {
			t.Errorf("report-only made %q at the edge", a)
		}
	}
	got := map[string]string{}
	for _, e := range h.c.cfg.Report.Entries() {
		got[e.Object] = e.Action
	}
	if got["configmaps a/x"] != report.Delete || got["configmaps a/y"] != report.Create || len(got) != 2 {
		t.Errorf("report %v, want x deleted and y created", got)
	}
	if breaker.asked != 0 {
		t.Errorf("the breaker was asked %d times about a deletion only reported", breaker.asked)
	}
}
