package signature

import (
	"crypto/ed25519"
	"testing"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// BenchmarkVerify is what --signature-policy adds to each write of a Deployment; the baseline,
// BenchmarkToDownstream, is the mapping every write makes anyway (same object, same run).
func BenchmarkVerify(b *testing.B) {
	pub, priv := newKey(b)
	obj := stored(b, priv)
	keys := map[string]ed25519.PublicKey{KeyID(pub): pub}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Verify(obj, keys, Expect{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToDownstream(b *testing.B) {
	_, priv := newKey(b)
	obj := stored(b, priv)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mapping.ToDownstream(obj, mapping.Options{OwnerLabelValue: "edge1"}); err != nil {
			b.Fatal(err)
		}
	}
}
