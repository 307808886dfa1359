package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Options are the syncer's identity as written into the marks.
type Options struct {
	// OwnerLabelValue is the value of OwnerLabel on every downstream object the syncer writes.
	OwnerLabelValue string
	// Cluster is the logical cluster (kcp workspace) the upstream object lives in, when the syncer
	// serves several; it is recorded in ClusterAnnotation. Empty for one workspace.
	Cluster string
	// KeepOnDelete marks the downstream object with PropagateDeletionAnnotation "false": the configs that select
	// it set propagateDeletion to false, so it stays when its upstream object goes.
	KeepOnDelete bool
	// Rename, if set, renames the object into the other side's form (a conversion).
	Rename *Rename
	// Generation records the upstream object's generation on the downstream one
	// (UpstreamGenerationAnnotation), for status return. Only for resources whose upstream serves a
	// status subresource: elsewhere every write, status return's included, makes a new generation.
	Generation bool
	// Retain are the fields the edge owns (retained fields): left out of the object, its digest and
	// the up-to-date comparison; RetainedFrom puts values in before a write.
	Retain []FieldPath
}

// metadataFromSource are the metadata fields that belong to the cluster the object was read from.
var metadataFromSource = []string{
	"uid", "resourceVersion", "generation", "managedFields", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "ownerReferences", "finalizers", "selfLink",
}

// upsyncAnnotationPrefix starts every annotation upsync writes on an upstream copy: the mark, its
// digest, and whatever else the mark records.
const upsyncAnnotationPrefix = "edge.kubestellar.io/upsync"

// sourceAnnotation tells whether an annotation belongs to the source cluster, or is a mark the
// syncer writes afresh (or not at all) on the object it maps to, and so is not copied.
func sourceAnnotation(key string) bool {
	if key == "kubectl.kubernetes.io/last-applied-configuration" || key == HashAnnotation || key == ClusterAnnotation || key == UpstreamNamespaceAnnotation || key == RenaturedFromAnnotation ||
		key == UpstreamGenerationAnnotation || key == UpstreamResourceVersionAnnotation || key == ReportAppliedAnnotation || key == PausedUntilAnnotation ||
		key == StoredBytesAnnotation || key == DriftAnnotation || key == AcknowledgeDriftAnnotation || key == DriftHeldAnnotation || key == DriftPutBackAnnotation ||
		strings.HasPrefix(key, upsyncAnnotationPrefix) || targetSignal(key) {
		return true
	}
	// kcp's bookkeeping: kcp.io/cluster, kcp.io/path, internal.workload.kcp.io/..., etc.
	domain, _, found := strings.Cut(key, "/")
	return found && (domain == "kcp.io" || strings.HasSuffix(domain, ".kcp.io"))
}

// ToDownstream returns the object to apply downstream for an upstream object: a copy without what
// belongs to the source cluster, with the ownership marks and the digest of its content. The upstream
// object is not modified.
func ToDownstream(up *unstructured.Unstructured, opts Options) (*unstructured.Unstructured, error) {
	if up.GetName() == "" || up.GetKind() == "" || up.GetAPIVersion() == "" {
		return nil, fmt.Errorf("object without apiVersion, kind or name")
	}
	out := up.DeepCopy()
	meta, _ := out.Object["metadata"].(map[string]interface{})
	for _, f := range metadataFromSource {
		delete(meta, f)
	}
	delete(out.Object, "status")
	renamed := opts.Rename.toDownstream(out) // what the edge allocates depends on the natural form
	stripAllocated(out)
	removeRetained(out.Object, opts.Retain)

	annotations := map[string]string{}
	for k, v := range out.GetAnnotations() {
		if !sourceAnnotation(k) {
			annotations[k] = v
		}
	}
	annotations[DownsyncedAnnotation] = MarkOf(out)
	if renamed {
		annotations[RenaturedFromAnnotation] = upstreamIdentity(up)
	}
	if opts.Cluster != "" {
		annotations[ClusterAnnotation] = opts.Cluster
	}
	if opts.KeepOnDelete {
		annotations[PropagateDeletionAnnotation] = "false"
	}
	if g := up.GetGeneration(); g > 0 && opts.Generation {
		// In the same request as the content: status return translates the edge's generations with it.
		annotations[UpstreamGenerationAnnotation] = strconv.FormatInt(g, 10)
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	delete(labels, UpsyncOwnerLabel)
	for k := range labels {
		if targetSignal(k) {
			delete(labels, k)
		}
	}
	labels[OwnerLabel] = opts.OwnerLabelValue
	out.SetLabels(labels)
	out.SetAnnotations(annotations)

	digest, err := contentHash(out)
	if err != nil {
		return nil, err
	}
	annotations[HashAnnotation] = digest
	if rv := up.GetResourceVersion(); rv != "" && ReportsApplied(up) {
		annotations[UpstreamResourceVersionAnnotation] = rv // after the digest: not content
	}
	out.SetAnnotations(annotations)
	return out, nil
}

// stripAllocated removes fields that the destination apiserver or its controllers allocate, and that
// would be wrong (or rejected) when copied from the source cluster.
func stripAllocated(obj *unstructured.Unstructured) {
	gk := obj.GroupVersionKind().GroupKind()
	switch {
	case gk.Group == "" && gk.Kind == "Service":
		if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
		}
		unstructured.RemoveNestedField(obj.Object, "spec", "healthCheckNodePort")
		if ports, ok, _ := unstructured.NestedSlice(obj.Object, "spec", "ports"); ok {
			for _, p := range ports {
				if m, ok := p.(map[string]interface{}); ok {
					delete(m, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
		}
	case gk.Group == "" && gk.Kind == "PersistentVolumeClaim":
		unstructured.RemoveNestedField(obj.Object, "spec", "volumeName")
		// The source's binding: copied without the volume, the edge's PV controller would take the
		// claim for lost.
		removeAnnotations(obj, "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
			"volume.kubernetes.io/selected-node", "volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner")
	case gk.Group == "apps" && gk.Kind == "Deployment":
		// The source's rollout revision; the edge's Deployment controller keeps its own.
		removeAnnotations(obj, "deployment.kubernetes.io/revision")
	case gk.Group == "" && gk.Kind == "ServiceAccount":
		delete(obj.Object, "secrets")
	case gk.Group == "" && gk.Kind == "Pod":
		unstructured.RemoveNestedField(obj.Object, "spec", "nodeName")
	case gk.Group == "" && gk.Kind == "Namespace":
		unstructured.RemoveNestedField(obj.Object, "spec", "finalizers")
	case gk.Group == "batch" && gk.Kind == "Job":
		// The source apiserver generated the selector from the source object's UID; the destination
		// generates its own unless the user chose the selector.
		if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(obj.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
				unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", l)
			}
		}
	}
}

// removeAnnotations removes annotations from obj.
func removeAnnotations(obj *unstructured.Unstructured, keys ...string) {
	a := obj.GetAnnotations()
	if a == nil {
		return
	}
	for _, k := range keys {
		delete(a, k)
	}
	obj.SetAnnotations(a)
}

// contentHash digests the object as it would be applied, without the digest annotation itself.
// encoding/json sorts map keys, so equal content gives equal digests.
func contentHash(obj *unstructured.Unstructured) (string, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return "", fmt.Errorf("encoding %s for its digest: %w", MarkOf(obj), err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:20], nil
}

// UpToDate tells whether the downstream object already carries everything the desired object asks
// for: the same digest (so nothing was removed upstream since the last apply) and every field of the
// desired object with the same value (so nobody changed a field the syncer owns). Fields the desired
// object does not name (defaults, fields of edge controllers, status) are not compared. An object of
// a slim cache (Slim) holds no content: the fields its apply manager owns are compared, each by the
// digest of its value (appliedMatch).
func UpToDate(desired, actual *unstructured.Unstructured) bool {
	if actual == nil {
		return false
	}
	if desired.GetAnnotations()[HashAnnotation] != actual.GetAnnotations()[HashAnnotation] {
		return false
	}
	// The upstream resourceVersion recorded is not content: it is written with content, or once when
	// the upstream object starts asking for it (ReportsApplied).
	if rv := desired.GetAnnotations()[UpstreamResourceVersionAnnotation]; rv != "" && actual.GetAnnotations()[UpstreamResourceVersionAnnotation] == "" {
		return false
	}
	// Nor is the size recorded (StoredBytesAnnotation): it goes with the next content write.
	desired = withoutAnnotation(withoutAnnotation(desired, UpstreamResourceVersionAnnotation), StoredBytesAnnotation)
	if applied, ok := actual.Object[AppliedField].(map[string]interface{}); ok {
		return appliedMatch(desiredFields(desired), applied, createdMarked(actual))
	}
	return Subset(desired.Object, actual.Object)
}

// Subset tells whether every field of want is in have with an equal value. Lists must have the same
// length and match element by element. A missing field counts as present when want's value for it is
// empty (nil, {} or []).
func Subset(want, have interface{}) bool {
	_, ok := FirstDifference(want, have, isEmpty)
	return ok
}

// FirstDifference is Subset's walk with the values a missing field stands for given by absent: ok,
// or the path (".spec.replicas", "[2]") of the first field of want, in the order of its sorted keys,
// that have does not match.
func FirstDifference(want, have interface{}, absent func(interface{}) bool) (path string, ok bool) {
	return firstDifference(want, have, absent, "")
}

func firstDifference(want, have interface{}, absent func(interface{}) bool, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]interface{}:
		h, ok := have.(map[string]interface{})
		if !ok {
			return path, len(w) == 0 && have == nil
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			hv, ok := h[k]
			if !ok {
				if absent(w[k]) {
					continue
				}
				return path + "." + k, false
			}
			if p, ok := firstDifference(w[k], hv, absent, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []interface{}:
		h, ok := have.([]interface{})
		if !ok {
			return path, len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return path, false
		}
		for i := range w {
			if p, ok := firstDifference(w[i], h[i], absent, fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		if wf, ok := number(want); ok {
			hf, ok := number(have)
			return path, ok && wf == hf
		}
		return path, reflect.DeepEqual(want, have)
	}
}

// Dropped tells whether v is a value an apiserver may leave out when it stores an object: an empty
// one (isEmpty), false, "" or 0.
func Dropped(v interface{}) bool {
	if isEmpty(v) {
		return true
	}
	switch t := v.(type) {
	case bool:
		return !t
	case string:
		return t == ""
	}
	n, ok := number(v)
	return ok && n == 0
}

func isEmpty(v interface{}) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(t) == 0
	case []interface{}:
		return len(t) == 0
	}
	return false
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// EqualApartFromStatus tells whether two versions of one object differ only in status and in
// bookkeeping that changes with every write (resourceVersion, managedFields). Downsync ignores such
// changes upstream (they are status return's business) and downstream (an edge controller writing
// status is no drift).
func EqualApartFromStatus(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(stripVolatile(a.Object), stripVolatile(b.Object))
}

func stripVolatile(obj map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k == "status" {
			continue
		}
		if k == "metadata" {
			if m, ok := v.(map[string]interface{}); ok {
				mm := make(map[string]interface{}, len(m))
				for mk, mv := range m {
					if mk != "resourceVersion" && mk != "managedFields" {
						mm[mk] = mv
					}
				}
				v = mm
			}
		}
		out[k] = v
	}
	return out
}
