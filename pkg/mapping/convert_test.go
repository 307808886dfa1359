package mapping

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kyvernoRules are the seeds' denatured Kyverno case: the PolicyReport CRD is denatured in the
// mailbox, and renamed back at the edge.
var kyvernoRules = []ConversionRule{{
	Up:     Form{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "policyreports.wgpolicyk8s.io.denatured"},
	Down:   Form{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "policyreports.wgpolicyk8s.io"},
	Config: "a", Field: "conversions[0]",
}}

var (
	gvkCRD          = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	gvkDenaturedPR  = schema.GroupVersionKind{Group: "wgpolicyk8s.io.denatured", Version: "v1alpha2", Kind: "PolicyReport"}
	gvkNaturalPR    = schema.GroupVersionKind{Group: "wgpolicyk8s.io", Version: "v1alpha2", Kind: "PolicyReport"}
	gvkConfigMap    = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	denaturedPRCRD  = "policyreports.wgpolicyk8s.io.denatured"
	naturalPRCRDNam = "policyreports.wgpolicyk8s.io"
)

func crd(name, group, kind string) *unstructured.Unstructured {
	plural, _, _ := strings.Cut(name, ".")
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]interface{}{"name": name, "uid": "u1", "resourceVersion": "7"},
		"spec": map[string]interface{}{"group": group, "scope": "Namespaced",
			"names":    map[string]interface{}{"plural": plural, "kind": kind, "listKind": kind + "List", "singular": strings.ToLower(kind)},
			"versions": []interface{}{map[string]interface{}{"name": "v1alpha2", "served": true, "storage": true}}},
		"status": map[string]interface{}{"acceptedNames": map[string]interface{}{"kind": kind}},
	}}
}

// TestCRDConversionRenaturesTheAPIAndItsObjects: a CRD conversion alone renames the CRD (name,
// spec.group, plural) and the custom resources of its group, both ways, and the downstream copy
// records where it came from.
func TestCRDConversionRenaturesTheAPIAndItsObjects(t *testing.T) {
	c, errs := NewConversions(kyvernoRules)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rename := c.For(gvkCRD)
	if rename == nil || rename.DownName(denaturedPRCRD) != naturalPRCRDNam || rename.UpName(naturalPRCRDNam) != denaturedPRCRD {
		t.Fatalf("CRD rename = %+v", rename)
	}
	if got := rename.DownName("other.example.com"); got != "other.example.com" {
		t.Errorf("an unnamed CRD renamed to %q", got)
	}
	up := crd(denaturedPRCRD, "wgpolicyk8s.io.denatured", "PolicyReport")
	before := up.DeepCopy()
	down, err := ToDownstream(up, Options{OwnerLabelValue: "edge1", Rename: rename})
	if err != nil {
		t.Fatal(err)
	}
	if down.GetName() != naturalPRCRDNam {
		t.Errorf("name %q", down.GetName())
	}
	if g, _, _ := unstructured.NestedString(down.Object, "spec", "group"); g != "wgpolicyk8s.io" {
		t.Errorf("spec.group %q", g)
	}
	if p, _, _ := unstructured.NestedString(down.Object, "spec", "names", "plural"); p != "policyreports" {
		t.Errorf("plural %q", p)
	}
	if got, want := down.GetAnnotations()[DownsyncedAnnotation], "CustomResourceDefinition//"+naturalPRCRDNam; got != want {
		t.Errorf("mark %q, want %q (the object's own identity)", got, want)
	}
	if got, want := down.GetAnnotations()[RenaturedFromAnnotation], "CustomResourceDefinition.apiextensions.k8s.io/v1//"+denaturedPRCRD; got != want {
		t.Errorf("renatured-from %q, want %q", got, want)
	}
	if !OwnedDownstream(down) {
		t.Error("the renamed copy is not recognised as owned")
	}
	if up.GetName() != before.GetName() || up.Object["spec"].(map[string]interface{})["group"] != "wgpolicyk8s.io.denatured" {
		t.Error("the upstream object was modified")
	}

	if got := c.Down(gvkDenaturedPR); got != gvkNaturalPR {
		t.Errorf("Down(%v) = %v", gvkDenaturedPR, got)
	}
	if got := c.Up(gvkNaturalPR); got != gvkDenaturedPR {
		t.Errorf("Up(%v) = %v", gvkNaturalPR, got)
	}
	if got := c.Down(gvkConfigMap); got != gvkConfigMap {
		t.Errorf("a ConfigMap is converted to %v", got)
	}
	if c.For(gvkConfigMap) != nil {
		t.Error("a ConfigMap has a rename")
	}

	// A report made at the edge goes up denatured; the edge object is untouched.
	report := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport",
		"metadata": map[string]interface{}{"name": "polr", "namespace": "policy", "uid": "edge-uid"},
		"results":  []interface{}{"pass"},
	}}
	copyUp, err := ToUpstream(report, Options{OwnerLabelValue: "edge1", Rename: c.For(c.Up(gvkNaturalPR))})
	if err != nil {
		t.Fatal(err)
	}
	if copyUp.GetAPIVersion() != "wgpolicyk8s.io.denatured/v1alpha2" || copyUp.GetKind() != "PolicyReport" {
		t.Errorf("upsynced as %s %s", copyUp.GetAPIVersion(), copyUp.GetKind())
	}
	if got := copyUp.GetAnnotations()[UpsyncedAnnotation]; got != "PolicyReport/policy/polr" || !OwnedUpstream(copyUp) {
		t.Errorf("upsync mark %q", got)
	}
	if report.GetAPIVersion() != "wgpolicyk8s.io/v1alpha2" {
		t.Error("the edge object was modified")
	}
}

// TestKindConversion: a rule without names renames every object of the kind (and only of the
// version it names); the version is kept when the downstream side names none.
func TestKindConversion(t *testing.T) {
	c, errs := NewConversions([]ConversionRule{{
		Up:   Form{Group: "denatured.example.com", Kind: "Widget", Version: "v1"},
		Down: Form{Group: "example.com", Kind: "Gadget"},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	up := schema.GroupVersionKind{Group: "denatured.example.com", Version: "v1", Kind: "Widget"}
	want := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	if got := c.Down(up); got != want {
		t.Errorf("Down = %v, want %v", got, want)
	}
	if got := c.Up(want); got != up {
		t.Errorf("Up = %v, want %v", got, up)
	}
	v2 := up
	v2.Version = "v2"
	if got := c.Down(v2); got != v2 {
		t.Errorf("a version the rule does not name is converted to %v", got)
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "denatured.example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "ns"}}}
	down, err := ToDownstream(obj, Options{OwnerLabelValue: "e", Rename: c.For(up)})
	if err != nil {
		t.Fatal(err)
	}
	if down.GetAPIVersion() != "example.com/v1" || down.GetKind() != "Gadget" || down.GetName() != "w" {
		t.Errorf("downstream %s %s %s", down.GetAPIVersion(), down.GetKind(), down.GetName())
	}
	if down.GetAnnotations()[DownsyncedAnnotation] != "Gadget/ns/w" {
		t.Errorf("mark %q", down.GetAnnotations()[DownsyncedAnnotation])
	}
}

// TestConversionProblems: malformed rules and rules that disagree are reported and do not apply;
// the same rule twice is one.
func TestConversionProblems(t *testing.T) {
	good := kyvernoRules[0]
	dup := good
	dup.Config = "b"
	c, errs := NewConversions([]ConversionRule{good, dup})
	if len(errs) > 0 || c.For(gvkCRD) == nil {
		t.Fatalf("the same rule twice: errors %v", errs)
	}

	other := good
	other.Down.Name = "policyreports.example.com"
	other.Config, other.Field = "c", "conversions[1]"
	c, errs = NewConversions([]ConversionRule{good, other})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "c conversions[1]") || !strings.Contains(errs[0].Error(), "a conversions[0]") {
		t.Errorf("disagreeing rules: errors %v", errs)
	}
	if c.For(gvkCRD) != nil || c.Down(gvkDenaturedPR) != gvkDenaturedPR {
		t.Error("a disagreeing rule applies")
	}

	for name, r := range map[string]ConversionRule{
		"no kind":        {Up: Form{Group: "a"}, Down: Form{Group: "b", Kind: "K"}},
		"name one side":  {Up: Form{Kind: "ConfigMap", Name: "x"}, Down: Form{Kind: "ConfigMap"}},
		"bad CRD name":   {Up: Form{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "nodots"}, Down: Form{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "a.b"}},
		"CRD into other": {Up: Form{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "a.b"}, Down: Form{Kind: "ConfigMap", Name: "a"}},
	} {
		r.Config = name
		c, errs := NewConversions([]ConversionRule{r, good})
		if len(errs) != 1 || errs[0].Config != name {
			t.Errorf("%s: errors %v", name, errs)
		}
		if c.For(gvkCRD) == nil {
			t.Errorf("%s: the good rule beside it does not apply", name)
		}
	}
	var nilConv *Conversions
	if !nilConv.Empty() || nilConv.Down(gvkConfigMap) != gvkConfigMap || nilConv.For(gvkCRD) != nil {
		t.Error("nil Conversions renames")
	}
}
