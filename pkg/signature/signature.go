package signature

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// Annotation holds the signed manifest, the signature and the key's id.
const Annotation = "edge.kubestellar.io/signature"

// lastApplied is kubectl's copy of what it applied: never part of what is signed.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Signed is the value of Annotation.
type Signed struct {
	// KeyID names the public key that verifies Signature (KeyID of it).
	KeyID string `json:"keyID"`
	// Signature is the ed25519 signature of the manifest's canonical JSON, base64.
	Signature string `json:"signature"`
	// Manifest is the object as signed.
	Manifest map[string]interface{} `json:"manifest"`
}

// Errors verification returns (wrapped with detail).
var (
	ErrUnsigned    = errors.New("not signed")
	ErrUnknownKey  = errors.New("signed by a key the edge does not trust")
	ErrBadSig      = errors.New("the signature does not match the signed manifest")
	ErrChanged     = errors.New("the object differs from what was signed")
	ErrMalformed   = errors.New("malformed signature annotation")
	ErrOtherObject = errors.New("the signature is for another object")
)

// KeyID is a public key's id: the first 16 hex digits of the SHA-256 of the key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Manifest is what is signed of obj: obj less its status, the metadata a server owns, the
// signature, kubectl's last-applied annotation and the annotations and labels of the syncer's
// domain (edge.kubestellar.io and its subdomains) that steer the syncer without changing what the
// edge runs (pauses, drift policy and acknowledgements, the per-target labels; not the marks that
// change how the object is kept: signed). Empty maps and lists left by the removal go too.
func Manifest(obj map[string]interface{}) map[string]interface{} {
	out := unstructured.Unstructured{Object: deepCopy(obj)}
	delete(out.Object, "status")
	for _, f := range serverOwned {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	for _, field := range []string{"annotations", "labels"} {
		m, _, _ := unstructured.NestedStringMap(out.Object, "metadata", field)
		for k := range m {
			if unsigned(k) || k == lastApplied || k == Annotation {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			unstructured.RemoveNestedField(out.Object, "metadata", field)
		} else {
			_ = unstructured.SetNestedStringMap(out.Object, m, "metadata", field)
		}
	}
	return out.Object
}

// serverOwned are the metadata fields a server sets: left out of what is signed, and taken from the
// stored object into what is applied.
var serverOwned = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}

// signedMarks are the annotations of the syncer's domain that decide how the edge keeps the object
// (create-only, kept on deletion, recreated on an immutable change): part of what is signed, so
// that the mailbox cannot freeze or keep a signed object at the edge by adding one.
var signedMarks = map[string]bool{
	"edge.kubestellar.io/downsync-overwrite":    true,
	"edge.kubestellar.io/propagate-deletion":    true,
	"edge.kubestellar.io/recreate-on-immutable": true,
}

// unsigned tells whether a label or annotation key is of the syncer's domain and left out of what is
// signed: it steers the syncer (a pause, the drift policy, an acknowledgement, per-target labels).
func unsigned(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	return found && (prefix == "edge.kubestellar.io" || strings.HasSuffix(prefix, ".edge.kubestellar.io")) &&
		!signedMarks[key] && key != Annotation
}

// Canonical is the manifest's canonical JSON: object keys sorted (encoding/json sorts map keys), no
// insignificant space, numbers as they were decoded.
func Canonical(manifest map[string]interface{}) ([]byte, error) {
	return json.Marshal(manifest)
}

// Sign signs obj's manifest with key and returns the annotation's value.
func Sign(obj map[string]interface{}, key ed25519.PrivateKey) (string, error) {
	m := Manifest(obj)
	data, err := Canonical(m)
	if err != nil {
		return "", err
	}
	pub, _ := key.Public().(ed25519.PublicKey)
	v, err := json.Marshal(Signed{KeyID: KeyID(pub), Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(key, data)), Manifest: m})
	return string(v), err
}

// Verify checks obj's signature against keys and obj against the signed manifest, and returns the
// object to apply: the signed manifest, with the metadata the signature leaves out (a server's, the
// syncer's domain) taken from obj, and its status. The key's id comes with it.
func Verify(obj *unstructured.Unstructured, keys map[string]ed25519.PublicKey) (*unstructured.Unstructured, string, error) {
	value, ok := obj.GetAnnotations()[Annotation]
	if !ok {
		return nil, "", fmt.Errorf("%w (no %s annotation)", ErrUnsigned, Annotation)
	}
	var s Signed
	if err := utiljson.Unmarshal([]byte(value), &s); err != nil || s.Manifest == nil {
		return nil, "", fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !keyIDForm.MatchString(s.KeyID) {
		return nil, "", fmt.Errorf("%w: key id %.40q is not 16 hex digits", ErrMalformed, s.KeyID)
	}
	pub, ok := keys[s.KeyID]
	if !ok {
		return nil, s.KeyID, fmt.Errorf("%w (key %q)", ErrUnknownKey, s.KeyID)
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil {
		return nil, s.KeyID, fmt.Errorf("%w: signature: %w", ErrMalformed, err)
	}
	data, err := Canonical(s.Manifest)
	if err != nil {
		return nil, s.KeyID, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !ed25519.Verify(pub, data, sig) {
		return nil, s.KeyID, ErrBadSig
	}
	if err := sameIdentity(s.Manifest, obj); err != nil {
		return nil, s.KeyID, err
	}
	// Values the apiserver drops when storing match an absent field: the manifest applied keeps them.
	if path, ok := mapping.FirstDifference(s.Manifest, Manifest(obj.Object), mapping.Dropped); !ok {
		return nil, s.KeyID, fmt.Errorf("%w at %s", ErrChanged, path)
	}
	return applied(obj, s.Manifest), s.KeyID, nil
}

// keyIDForm is what KeyID returns.
var keyIDForm = regexp.MustCompile(`^[0-9a-f]{16}$`)

// sameIdentity refuses a signature made for another object: the manifest must name obj's
// apiVersion, kind, name and namespace (a signature copied onto an object of another name or
// namespace does not verify; sign namespaced objects with their namespace).
func sameIdentity(manifest map[string]interface{}, obj *unstructured.Unstructured) error {
	m := unstructured.Unstructured{Object: manifest}
	for _, f := range []struct{ what, signed, stored string }{
		{"apiVersion", m.GetAPIVersion(), obj.GetAPIVersion()},
		{"kind", m.GetKind(), obj.GetKind()},
		{"name", m.GetName(), obj.GetName()},
		{"namespace", m.GetNamespace(), obj.GetNamespace()},
	} {
		if f.signed != f.stored {
			return fmt.Errorf("%w: signed for %s %q, not %q", ErrOtherObject, f.what, f.signed, f.stored)
		}
	}
	return nil
}

// applied is the manifest with what the signature leaves out taken from obj.
func applied(obj *unstructured.Unstructured, manifest map[string]interface{}) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: deepCopy(manifest)}
	if st, ok := obj.Object["status"]; ok {
		out.Object["status"] = runtime.DeepCopyJSONValue(st)
	}
	meta, _, _ := unstructured.NestedMap(obj.Object, "metadata")
	for _, f := range serverOwned {
		if v, ok := meta[f]; ok {
			_ = unstructured.SetNestedField(out.Object, v, "metadata", f)
		}
	}
	for _, field := range []string{"annotations", "labels"} {
		from, _, _ := unstructured.NestedStringMap(obj.Object, "metadata", field)
		to, _, _ := unstructured.NestedStringMap(out.Object, "metadata", field)
		for k, v := range from {
			if unsigned(k) {
				if to == nil {
					to = map[string]string{}
				}
				to[k] = v
			}
		}
		if len(to) > 0 {
			_ = unstructured.SetNestedStringMap(out.Object, to, "metadata", field)
		}
	}
	return out
}

// deepCopy copies a JSON-shaped map.
func deepCopy(m map[string]interface{}) map[string]interface{} {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
