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
	"slices"
	"strconv"
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
	// Claims, if set, are signed with the manifest: where and in which order it may be applied.
	Claims *Claims `json:"claims,omitempty"`
}

// Claims bind a signed object to where and in which order it may be applied.
type Claims struct {
	// Targets are the sync targets it is for (their names); empty: any.
	Targets []string `json:"targets,omitempty"`
	// Serial orders the signed versions of one object: an edge keeps the highest it applied on its
	// copy (mapping.SignedSerialAnnotation) and refuses a lower one (a rollback). 0: none.
	Serial int64 `json:"serial,omitempty"`
}

// Expect is what the edge requires of a signature besides its key: the sync target it is applied at,
// the serial it applied last (0: none), and whether claims of both are required (Strict).
type Expect struct {
	Target        string
	AppliedSerial int64
	RequireClaims bool
}

// Errors verification returns (wrapped with detail).
var (
	ErrUnsigned    = errors.New("not signed")
	ErrUnknownKey  = errors.New("signed by a key the edge does not trust")
	ErrBadSig      = errors.New("the signature does not match the signed manifest")
	ErrChanged     = errors.New("the object differs from what was signed")
	ErrMalformed   = errors.New("malformed signature annotation")
	ErrOtherObject = errors.New("the signature is for another object")
	ErrOtherTarget = errors.New("signed for other sync targets")
	ErrRolledBack  = errors.New("signed with a lower serial than the edge applied (a rollback)")
	ErrNoClaims    = errors.New("signed without the claims the edge requires (targets and serial)")
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
	return SignWith(obj, key, nil)
}

// SignWith signs obj's manifest and the claims (none when nil) with key and returns the annotation's
// value.
func SignWith(obj map[string]interface{}, key ed25519.PrivateKey, claims *Claims) (string, error) {
	s := Signed{Manifest: Manifest(obj), Claims: claims}
	data, err := s.signedData()
	if err != nil {
		return "", err
	}
	pub, _ := key.Public().(ed25519.PublicKey)
	s.KeyID, s.Signature = KeyID(pub), base64.StdEncoding.EncodeToString(ed25519.Sign(key, data))
	v, err := json.Marshal(s)
	return string(v), err
}

// signedData is what the signature is over: the manifest's canonical JSON, or with claims, that of
// both (so that a signature without claims stays what it was).
func (s Signed) signedData() ([]byte, error) {
	if s.Claims == nil {
		return Canonical(s.Manifest)
	}
	return json.Marshal(map[string]interface{}{"claims": s.Claims, "manifest": s.Manifest})
}

// check holds the claims to what the edge expects.
func (c *Claims) check(expect Expect) error {
	if c == nil || len(c.Targets) == 0 || c.Serial <= 0 {
		if expect.RequireClaims {
			return ErrNoClaims
		}
	}
	if c == nil {
		return nil
	}
	if len(c.Targets) > 0 && !slices.Contains(c.Targets, expect.Target) {
		return fmt.Errorf("%w (%s), not %s", ErrOtherTarget, strings.Join(c.Targets, ", "), expect.Target)
	}
	if c.Serial < expect.AppliedSerial {
		return fmt.Errorf("%w: serial %d, applied %d", ErrRolledBack, c.Serial, expect.AppliedSerial)
	}
	return nil
}

// Verify checks obj's signature against keys, its claims against expect and obj against the signed
// manifest, and returns the object to apply: the signed manifest, with the metadata the signature
// leaves out (a server's, the syncer's domain) taken from obj, its status, and the serial signed
// (mapping.SignedSerialAnnotation). The key's id comes with it.
func Verify(obj *unstructured.Unstructured, keys map[string]ed25519.PublicKey, expect Expect) (*unstructured.Unstructured, string, error) {
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
	data, err := s.signedData()
	if err != nil {
		return nil, s.KeyID, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !ed25519.Verify(pub, data, sig) {
		return nil, s.KeyID, ErrBadSig
	}
	if err := sameIdentity(s.Manifest, obj); err != nil {
		return nil, s.KeyID, err
	}
	if err := s.Claims.check(expect); err != nil {
		return nil, s.KeyID, err
	}
	// Values the apiserver drops when storing match an absent field: the manifest applied keeps them.
	if path, ok := mapping.FirstDifference(s.Manifest, Manifest(obj.Object), mapping.Dropped); !ok {
		return nil, s.KeyID, fmt.Errorf("%w at %s", ErrChanged, path)
	}
	out := applied(obj, s.Manifest)
	if s.Claims != nil && s.Claims.Serial > 0 {
		ann := out.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[mapping.SignedSerialAnnotation] = strconv.FormatInt(s.Claims.Serial, 10)
		out.SetAnnotations(ann)
	}
	return out, s.KeyID, nil
}

// AppliedSerial is the serial the edge copy records as applied (0: none).
func AppliedSerial(edgeCopy *unstructured.Unstructured) int64 {
	if edgeCopy == nil {
		return 0
	}
	n, _ := strconv.ParseInt(edgeCopy.GetAnnotations()[mapping.SignedSerialAnnotation], 10, 64)
	return n
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

// applied is the manifest with what the signature leaves out taken from obj: the server's metadata,
// the status, and the annotations of the syncer's domain that steer it (a pause, the drift policy).
// Unsigned labels of that domain are not taken: no edge selector can be made to match them.
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
	from, _, _ := unstructured.NestedStringMap(obj.Object, "metadata", "annotations")
	to, _, _ := unstructured.NestedStringMap(out.Object, "metadata", "annotations")
	for k, v := range from {
		if unsigned(k) && k != mapping.SignedSerialAnnotation { // the mailbox's say is no serial
			if to == nil {
				to = map[string]string{}
			}
			to[k] = v
		}
	}
	if len(to) > 0 {
		_ = unstructured.SetNestedStringMap(out.Object, to, "metadata", "annotations")
	}
	return out
}

// deepCopy copies a JSON-shaped map.
func deepCopy(m map[string]interface{}) map[string]interface{} {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}
