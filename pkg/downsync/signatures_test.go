package downsync

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
	"github.com/kubestellar/syncer/pkg/signature"
)

// keys is a Signatures over fixed keys.
type keys struct {
	trusted map[string]ed25519.PublicKey
	enforce bool
}

func (k keys) Verify(obj *unstructured.Unstructured, target string, applied int64) (*unstructured.Unstructured, string, error) {
	return signature.Verify(obj, k.trusted, signature.Expect{Target: target, AppliedSerial: applied})
}
func (k keys) Enforce() bool { return k.enforce }

// TestSignatures: under Enforce a signed object is written as signed (a field added upstream after
// signing is not), one changed after signing is not written, with a Warning Event and a failure in
// ObjectsSynced until it verifies again; under Warn it is written, and said once.
func TestSignatures(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed := upCM.DeepCopy()
	sig, err := signature.Sign(signed.Object, priv)
	if err != nil {
		t.Fatal(err)
	}
	signed.SetAnnotations(map[string]string{signature.Annotation: sig})
	unsignedField := signed.DeepCopy()
	_ = unstructured.SetNestedField(unsignedField.Object, "injected", "data", "extra")
	tampered := signed.DeepCopy()
	_ = unstructured.SetNestedField(tampered.Object, "evil", "data", "k")
	trusted := map[string]ed25519.PublicKey{signature.KeyID(pub): pub}

	h := newHarness(t, selecting("a"), objs(unsignedField, nsA), objs(nsA))
	h.c.cfg.Signatures = keys{trusted: trusted, enforce: true}
	if _, err := h.c.process(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	created, err := h.down.Resource(cmGVR).Namespace("a").Get(context.Background(), "x", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a signed object not written: %v (actions %v)", err, h.actions())
	}
	if data, _, _ := unstructured.NestedStringMap(created.Object, "data"); data["k"] != "v" || data["extra"] != "" {
		t.Errorf("written data %v: want the signed data only", data)
	}

	for _, enforce := range []bool{true, false} {
		h := newHarness(t, selecting("a"), objs(tampered, nsA), objs(nsA))
		events := record.NewFakeRecorder(10)
		h.c.writes = framework.NewWrites("downsync", framework.DefaultFieldManager, h.m, events)
		h.c.cfg.Signatures = keys{trusted: trusted, enforce: enforce}
		for i := 0; i < 2; i++ {
			if _, err := h.c.process(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}
		n, problems := h.c.Withheld().Problems(5)
		switch {
		case enforce && (len(h.actions()) != 0 || n != 1 || !strings.Contains(problems[0].Reason, "differs from what was signed")):
			t.Errorf("Enforce, a changed object: actions %v, failures %d %v; want nothing written and one failure", h.actions(), n, problems)
		case !enforce && (len(h.actions()) == 0 || h.actions()[0] != "create configmaps" || n != 0):
			t.Errorf("Warn, a changed object: actions %v, failures %d; want it written, no failure", h.actions(), n)
		}
		if len(events.Events) != 1 || !strings.Contains(<-events.Events, "Warning SignatureInvalid Sync target") {
			t.Errorf("enforce %v: %d Events, want one SignatureInvalid", enforce, len(events.Events))
		}
	}
}

// TestSignedClaims: under Enforce an object signed for other sync targets is not written, nor one
// signed with a lower serial than the edge copy records (a rollback: the edge keeps what it has);
// one signed for this target at a serial not below is written, with its serial recorded.
func TestSignedClaims(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	trusted := map[string]ed25519.PublicKey{signature.KeyID(pub): pub}
	signedWith := func(claims *signature.Claims) *unstructured.Unstructured {
		obj := upCM.DeepCopy()
		sig, err := signature.SignWith(obj.Object, priv, claims)
		if err != nil {
			t.Fatal(err)
		}
		obj.SetAnnotations(map[string]string{signature.Annotation: sig})
		return obj
	}
	edgeAt := func(serial string) []*unstructured.Unstructured {
		d := owned(t, upCM)
		ann := d.GetAnnotations()
		ann[mapping.SignedSerialAnnotation] = serial
		d.SetAnnotations(ann)
		return objs(d, nsA)
	}
	for _, c := range []struct {
		name    string
		up      *unstructured.Unstructured
		down    []*unstructured.Unstructured
		written bool
		reason  string
	}{
		{"for this target", signedWith(&signature.Claims{Targets: []string{"florin"}, Serial: 5}), objs(nsA), true, ""},
		{"for another target", signedWith(&signature.Claims{Targets: []string{"oslo"}, Serial: 5}), objs(nsA), false, "signed for other sync targets (oslo), not florin"},
		{"a rollback", signedWith(&signature.Claims{Serial: 3}), edgeAt("5"), false, "lower serial than the edge applied"},
	} {
		h := newHarness(t, selecting("a"), objs(c.up, nsA), c.down)
		h.c.cfg.Signatures, h.c.cfg.SyncTargetName = keys{trusted: trusted, enforce: true}, "florin"
		if _, err := h.c.process(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		n, problems := h.c.Withheld().Problems(5)
		if !c.written {
			if len(h.actions()) != 0 || n != 1 || !strings.Contains(problems[0].Reason, c.reason) {
				t.Errorf("%s: actions %v, failures %d %v; want nothing written and %q", c.name, h.actions(), n, problems, c.reason)
			}
			continue
		}
		got, err := h.down.Resource(cmGVR).Namespace("a").Get(context.Background(), "x", metav1.GetOptions{})
		if err != nil || n != 0 || got.GetAnnotations()[mapping.SignedSerialAnnotation] != "5" {
			t.Errorf("%s: %v, failures %d, annotations %v; want it written with serial 5 (actions %v)", c.name, err, n, got.GetAnnotations(), h.actions())
		}
	}
}
