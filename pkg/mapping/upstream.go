package mapping

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// UpsyncOwnerLabel is set on upstream copies made by upsync to the syncer's owner label value, so
	// that a restarted syncer finds copies whose resource left the upsync selection meanwhile.
	UpsyncOwnerLabel = "edge.kubestellar.io/upsynced-by"
	// UpsyncHashAnnotation is the digest of an upsynced copy's content (status excluded), written
	// with it so that an unchanged object is never written again.
	UpsyncHashAnnotation = "edge.kubestellar.io/upsync-hash"
	// UpsyncSourceUIDAnnotation records on an upstream copy the UID of the edge object it copies.
	// Only upsync writes it; with the mark and the owner label it proves the copy is the syncer's own,
	// which upsync requires before it deletes anything upstream.
	UpsyncSourceUIDAnnotation = "edge.kubestellar.io/upsynced-from-uid"
)

// ToUpstream maps an edge object to the upstream copy upsync writes: server-set metadata and
// edge-allocated fields are dropped, owner references (they name edge UIDs) too, the upsync mark,
// owner label, the edge object's UID and the content digest are added. The status is kept; the caller writes it through the
// status subresource where there is one. The input is not modified.
func ToUpstream(down *unstructured.Unstructured, opts Options) (*unstructured.Unstructured, error) {
	if down.GetName() == "" || down.GetKind() == "" || down.GetAPIVersion() == "" {
		return nil, fmt.Errorf("object without apiVersion, kind or name")
	}
	out := down.DeepCopy()
	meta, _ := out.Object["metadata"].(map[string]interface{})
	for _, f := range metadataFromSource {
		delete(meta, f)
	}
	status, hasStatus := out.Object["status"]
	delete(out.Object, "status")
	stripAllocated(out)
	opts.Rename.toUpstream(out)

	annotations := map[string]string{}
	for k, v := range out.GetAnnotations() {
		if !sourceAnnotation(k) && k != DownsyncedAnnotation { // sourceAnnotation drops upsync's own marks
			annotations[k] = v
		}
	}
	annotations[UpsyncedAnnotation] = MarkOf(out)
	if uid := down.GetUID(); uid != "" {
		annotations[UpsyncSourceUIDAnnotation] = string(uid)
	}
	labels := map[string]string{}
	for k, v := range out.GetLabels() {
		if k != OwnerLabel {
			labels[k] = v
		}
	}
	labels[UpsyncOwnerLabel] = opts.OwnerLabelValue
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	digest, err := contentHash(out)
	if err != nil {
		return nil, err
	}
	annotations[UpsyncHashAnnotation] = digest
	out.SetAnnotations(annotations)
	if hasStatus {
		out.Object["status"] = status
	}
	return out, nil
}

// UpsyncedUpToDate tells whether an upstream copy already has the content (status excluded) of the
// desired one.
func UpsyncedUpToDate(desired, actual *unstructured.Unstructured) bool {
	if actual == nil || desired.GetAnnotations()[UpsyncHashAnnotation] != actual.GetAnnotations()[UpsyncHashAnnotation] {
		return false
	}
	want := desired.DeepCopy()
	delete(want.Object, "status")
	return Subset(want.Object, actual.Object)
}

// StatusEqual tells whether two objects have the same status (both absent counts as equal).
func StatusEqual(a, b *unstructured.Unstructured) bool { return StatusIs(b, a.Object["status"]) }

// StatusIs tells whether obj's status is status (nil: none; absent and empty count as equal).
func StatusIs(obj *unstructured.Unstructured, status interface{}) bool {
	have, ok := obj.Object["status"]
	if status == nil || !ok {
		return (status == nil) == !ok || (isEmpty(status) && isEmpty(have))
	}
	return Subset(status, have) && Subset(have, status)
}

// UpsyncedContent digests what upsync writes for an edge object, status included: the same digest
// written again and again means another actor keeps undoing it upstream.
func UpsyncedContent(desired *unstructured.Unstructured) string {
	digest := desired.GetAnnotations()[UpsyncHashAnnotation]
	if status, ok := desired.Object["status"]; ok {
		if h, err := contentHash(&unstructured.Unstructured{Object: map[string]interface{}{"status": status}}); err == nil {
			digest += "/" + h
		}
	}
	return digest
}
