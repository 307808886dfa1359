package signature

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/pkg/mapping"
)

const userManifest = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  annotations:
    edge.kubestellar.io/drift: Report
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: httpd
        image: example.com/httpd:1.0
        args: ["-f"]
`

func newKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func object(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// stored is the signed object as an apiserver keeps it: the signature on, fields defaulted, metadata
// a server owns, kubectl's last-applied annotation, the syncer's per-target labels, a status.
func stored(t testing.TB, priv ed25519.PrivateKey) *unstructured.Unstructured {
	t.Helper()
	return storedWith(t, priv, nil)
}

// storedWith is stored, signed with claims.
func storedWith(t testing.TB, priv ed25519.PrivateKey, claims *Claims) *unstructured.Unstructured {
	t.Helper()
	u := object(t, userManifest)
	sig, err := SignWith(u.Object, priv, claims)
	if err != nil {
		t.Fatal(err)
	}
	ann := u.GetAnnotations()
	ann[Annotation] = sig
	ann[lastApplied] = `{"kind":"Deployment"}`
	ann["deployment.kubernetes.io/revision"] = "1"
	u.SetAnnotations(ann)
	labels := u.GetLabels()
	labels["executing.edge.kubestellar.io/edge1"] = "true"
	u.SetLabels(labels)
	u.SetUID("uid-1")
	u.SetResourceVersion("42")
	u.SetGeneration(3)
	_ = unstructured.SetNestedField(u.Object, int64(600), "spec", "progressDeadlineSeconds")
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]interface{})["imagePullPolicy"] = "IfNotPresent"
	_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	_ = unstructured.SetNestedField(u.Object, int64(2), "status", "readyReplicas")
	return u
}

// TestVerify: the stored form of a signed object verifies (defaults, server metadata, kubectl's and
// the syncer's annotations and labels do not break it) and what is applied is the signed manifest
// with the identity, the syncer's marks and the status taken from the stored object, never a field
// the signer did not sign.
func TestVerify(t *testing.T) {
	pub, priv := newKey(t)
	keys := map[string]ed25519.PublicKey{KeyID(pub): pub}
	obj := stored(t, priv)
	got, id, err := Verify(obj, keys, Expect{})
	if err != nil || id != KeyID(pub) {
		t.Fatalf("Verify: %v (key %q)", err, id)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "progressDeadlineSeconds"); found {
		t.Error("a defaulted field the signer did not sign is applied")
	}
	if got.GetAnnotations()[lastApplied] != "" || got.GetAnnotations()["deployment.kubernetes.io/revision"] != "" {
		t.Errorf("unsigned annotations applied: %v", got.GetAnnotations())
	}
	if got.GetAnnotations()["edge.kubestellar.io/drift"] != "Report" {
		t.Errorf("the syncer's own annotations (steering it) not kept: %v", got.GetAnnotations())
	}
	if _, ok := got.GetLabels()["executing.edge.kubestellar.io/edge1"]; ok {
		t.Errorf("an unsigned label of the syncer's domain reaches what is applied: %v", got.GetLabels())
	}
	if got.GetAnnotations()[Annotation] != "" {
		t.Error("the signature (and the manifest in it) would reach the edge")
	}
	if got.GetUID() != "uid-1" || got.GetResourceVersion() != "42" || got.GetGeneration() != 3 {
		t.Errorf("identity %s %s %d", got.GetUID(), got.GetResourceVersion(), got.GetGeneration())
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas"); n != 2 {
		t.Error("status not kept")
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 2 {
		t.Errorf("spec.replicas %d, want the signed 2", r)
	}
}

// TestVerifyRefuses: unsigned, an unknown key, a signature over another manifest, a signed field
// changed, a list grown and a field removed are each refused with their reason.
func TestVerifyRefuses(t *testing.T) {
	pub, priv := newKey(t)
	otherPub, otherPriv := newKey(t)
	keys := map[string]ed25519.PublicKey{KeyID(pub): pub}
	for _, tc := range []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   error
	}{
		{"unsigned", func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			delete(a, Annotation)
			u.SetAnnotations(a)
		}, ErrUnsigned},
		{"an untrusted key", func(u *unstructured.Unstructured) {
			sig, _ := Sign(object(t, userManifest).Object, otherPriv)
			a := u.GetAnnotations()
			a[Annotation] = sig
			u.SetAnnotations(a)
		}, ErrUnknownKey},
		{"malformed", func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			a[Annotation] = "{not json"
			u.SetAnnotations(a)
		}, ErrMalformed},
		{"the manifest in the annotation changed", func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			var s Signed
			if err := json.Unmarshal([]byte(a[Annotation]), &s); err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedField(s.Manifest, int64(20), "spec", "replicas")
			_ = unstructured.SetNestedField(u.Object, int64(20), "spec", "replicas") // and the object to match
			v, _ := json.Marshal(s)
			a[Annotation] = string(v)
			u.SetAnnotations(a)
		}, ErrBadSig},
		{"a signed field changed", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(20), "spec", "replicas")
		}, ErrChanged},
		{"an image changed", func(u *unstructured.Unstructured) {
			c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c[0].(map[string]interface{})["image"] = "evil.example.com/miner"
			_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
		}, ErrChanged},
		{"a container added", func(u *unstructured.Unstructured) {
			c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c = append(c, map[string]interface{}{"name": "sidecar", "image": "evil.example.com/miner"})
			_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
		}, ErrChanged},
		{"a signed label removed", func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			delete(l, "app")
			u.SetLabels(l)
		}, ErrChanged},
		{"copied onto an object of another name", func(u *unstructured.Unstructured) { u.SetName("web-2") }, ErrOtherObject},
		{"copied into another namespace", func(u *unstructured.Unstructured) { u.SetNamespace("kube-system") }, ErrOtherObject},
		{"a key id that is not one", func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			var s Signed
			_ = json.Unmarshal([]byte(a[Annotation]), &s)
			s.KeyID = strings.Repeat("x", 5000)
			v, _ := json.Marshal(s)
			a[Annotation] = string(v)
			u.SetAnnotations(a)
		}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := stored(t, priv)
			tc.change(u)
			if _, _, err := Verify(u, keys, Expect{}); !errors.Is(err, tc.want) {
				t.Errorf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
	// Rotation: two keys trusted at once, either verifies.
	both := map[string]ed25519.PublicKey{KeyID(pub): pub, KeyID(otherPub): otherPub}
	for _, k := range []ed25519.PrivateKey{priv, otherPriv} {
		if _, _, err := Verify(stored(t, k), both, Expect{}); err != nil {
			t.Errorf("with two trusted keys: %v", err)
		}
	}
}

// TestAnUnsignedFieldIsNeverApplied: a field added upstream after signing (hostNetwork) is not a
// change of a signed field, so the object verifies, but the field is not in what is applied; nor is
// a mark that would freeze or keep the object at the edge (create-only), which is signed when wanted.
func TestAnUnsignedFieldIsNeverApplied(t *testing.T) {
	pub, priv := newKey(t)
	u := stored(t, priv)
	_ = unstructured.SetNestedField(u.Object, true, "spec", "template", "spec", "hostNetwork")
	a := u.GetAnnotations()
	a["edge.kubestellar.io/downsync-overwrite"] = "false"
	u.SetAnnotations(a)
	got, _, err := Verify(u, map[string]ed25519.PublicKey{KeyID(pub): pub}, Expect{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "template", "spec", "hostNetwork"); found {
		t.Error("a field the signer did not sign is applied")
	}
	if got.GetAnnotations()["edge.kubestellar.io/downsync-overwrite"] != "" {
		t.Error("an unsigned create-only mark is applied")
	}
}

// TestZeroValuesTheServerDrops: signed false, "", 0, null and empty values verify against a stored
// object that left them out, as apiservers do.
func TestZeroValuesTheServerDrops(t *testing.T) {
	pub, priv := newKey(t)
	u := object(t, userManifest)
	for _, f := range []struct {
		v    interface{}
		path []string
	}{{false, []string{"spec", "template", "spec", "hostNetwork"}}, {"", []string{"spec", "template", "spec", "serviceAccountName"}},
		{int64(0), []string{"spec", "minReadySeconds"}}, {nil, []string{"spec", "strategy"}}} {
		_ = unstructured.SetNestedField(u.Object, f.v, f.path...)
	}
	sig, err := Sign(u.Object, priv)
	if err != nil {
		t.Fatal(err)
	}
	s := object(t, userManifest) // as stored: none of them
	a := s.GetAnnotations()
	a[Annotation] = sig
	s.SetAnnotations(a)
	if _, _, err := Verify(s, map[string]ed25519.PublicKey{KeyID(pub): pub}, Expect{}); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// TestClaims: a signature's claims are signed (edited, it does not verify); it applies only at the
// sync targets it names, and not below the serial the edge copy records; the serial applied is
// recorded on what is applied, never the mailbox's say of it; Strict requires both claims.
func TestClaims(t *testing.T) {
	pub, priv := newKey(t)
	keys := map[string]ed25519.PublicKey{KeyID(pub): pub}
	claimed := storedWith(t, priv, &Claims{Targets: []string{"florin", "lyon"}, Serial: 7})
	got, _, err := Verify(claimed, keys, Expect{Target: "lyon", AppliedSerial: 7, RequireClaims: true})
	if err != nil {
		t.Fatalf("claims as expected: %v", err)
	}
	if s := got.GetAnnotations()[mapping.SignedSerialAnnotation]; s != "7" {
		t.Errorf("serial applied %q, want 7", s)
	}
	if AppliedSerial(got) != 7 || AppliedSerial(nil) != 0 {
		t.Errorf("AppliedSerial %d", AppliedSerial(got))
	}
	for _, c := range []struct {
		name   string
		obj    *unstructured.Unstructured
		expect Expect
		want   error
	}{
		{"another site", claimed, Expect{Target: "oslo"}, ErrOtherTarget},
		{"a rollback", claimed, Expect{Target: "florin", AppliedSerial: 8}, ErrRolledBack},
		{"no claims under Strict", stored(t, priv), Expect{Target: "florin", RequireClaims: true}, ErrNoClaims},
		{"targets only under Strict", storedWith(t, priv, &Claims{Targets: []string{"florin"}}), Expect{Target: "florin", RequireClaims: true}, ErrNoClaims},
		{"claims edited", edited(t, claimed, func(s *Signed) { s.Claims.Targets = []string{"oslo"} }), Expect{Target: "oslo"}, ErrBadSig},
		{"claims dropped", edited(t, claimed, func(s *Signed) { s.Claims = nil }), Expect{Target: "florin"}, ErrBadSig},
	} {
		if _, _, err := Verify(c.obj, keys, c.expect); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Without claims any target and serial do, as before; the mailbox's serial is not taken.
	plain := stored(t, priv)
	ann := plain.GetAnnotations()
	ann[mapping.SignedSerialAnnotation] = "999999"
	plain.SetAnnotations(ann)
	got, _, err = Verify(plain, keys, Expect{Target: "oslo", AppliedSerial: 3})
	if err != nil {
		t.Fatalf("without claims: %v", err)
	}
	if s, ok := got.GetAnnotations()[mapping.SignedSerialAnnotation]; ok {
		t.Errorf("the mailbox's serial %q was applied", s)
	}
}

// edited is obj with its signature annotation changed by edit, not signed again.
func edited(t *testing.T, obj *unstructured.Unstructured, edit func(*Signed)) *unstructured.Unstructured {
	t.Helper()
	out := obj.DeepCopy()
	var s Signed
	if err := json.Unmarshal([]byte(out.GetAnnotations()[Annotation]), &s); err != nil {
		t.Fatal(err)
	}
	edit(&s)
	v, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	ann := out.GetAnnotations()
	ann[Annotation] = string(v)
	out.SetAnnotations(ann)
	return out
}
