package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// DownsyncedAnnotation marks a downstream object written by the syncer. Its value is
	// <Kind>/<namespace>/<name> of the object itself, so that a copy of the annotation onto another
	// object (as the Deployment controller does onto ReplicaSets) does not make that object ours.
	DownsyncedAnnotation = "edge.kubestellar.io/downsynced"
	// UpsyncedAnnotation marks an upstream object created by upsync, with the same value form.
	UpsyncedAnnotation = "edge.kubestellar.io/upsynced"
	// OverwriteAnnotation set to "false" on an upstream object makes it create-only downstream: it is
	// created once, never updated and never deleted by the syncer.
	OverwriteAnnotation = "edge.kubestellar.io/downsync-overwrite"
	// HashAnnotation holds a digest of what the syncer last applied, so that a field removed upstream
	// is noticed even though the downstream object still has it.
	HashAnnotation = "edge.kubestellar.io/downsync-hash"
	// OwnerLabel lets the syncer watch only the downstream objects it owns. Its value identifies the
	// syncer (its sync target), so that two syncers can share an edge cluster.
	OwnerLabel = "edge.kubestellar.io/downsynced-by"
	// RecreateAnnotation set to "false" on an upstream object keeps the syncer from deleting and
	// recreating its edge copy when the edge refuses a change as immutable; the failure is reported.
	// PersistentVolumeClaims and PersistentVolumes are not recreated unless it is "true".
	RecreateAnnotation = "edge.kubestellar.io/recreate-on-immutable"
	// ClusterAnnotation records, on a downstream object, the logical cluster (kcp workspace) of its
	// upstream object when the syncer serves several workspaces. Absent for a single workspace.
	ClusterAnnotation = "edge.kubestellar.io/upstream-cluster"
	// PropagateDeletionAnnotation set to "false" on a downstream object keeps it when its upstream
	// object is deleted or leaves the selection. The syncer sets it when every config selecting the
	// object has propagateDeletion false; set on an upstream object, it is copied and acts alike.
	PropagateDeletionAnnotation = "edge.kubestellar.io/propagate-deletion"
	// SignedSerialAnnotation records on an edge copy the serial of the signature it was applied
	// from (package signature's claims): a lower one is refused as a rollback.
	SignedSerialAnnotation = "edge.kubestellar.io/signed-serial"
	// StoredBytesAnnotation records on an edge copy its size as written (JSON bytes), outside its
	// digest: the syncer counts what its copies hold at the edge (--max-edge-bytes) from it.
	StoredBytesAnnotation = "edge.kubestellar.io/stored-bytes"
)

// KeepOnDelete tells whether a downstream object stays when its upstream object goes.
func KeepOnDelete(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(obj.GetAnnotations()[PropagateDeletionAnnotation], "false")
}

// ClusterOf is the logical cluster recorded on a downstream object; empty for a single workspace.
func ClusterOf(obj *unstructured.Unstructured) string { return obj.GetAnnotations()[ClusterAnnotation] }

// Mark is the value of DownsyncedAnnotation (and UpsyncedAnnotation) for an object.
func Mark(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// MarkOf is Mark for an object.
func MarkOf(obj *unstructured.Unstructured) string {
	return Mark(obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// OwnedDownstream tells whether a downstream object was written by the syncer: it carries the
// downsynced annotation with its own Kind/namespace/name.
func OwnedDownstream(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[DownsyncedAnnotation] == MarkOf(obj)
}

// KeepOnImmutable tells whether the object is not recreated when the edge refuses a change in place:
// it opts out (RecreateAnnotation "false"), or it holds data its deletion would lose (a
// PersistentVolumeClaim or PersistentVolume, unless it opts in with "true").
func KeepOnImmutable(obj *unstructured.Unstructured) bool {
	switch v := obj.GetAnnotations()[RecreateAnnotation]; {
	case strings.EqualFold(v, "false"):
		return true
	case strings.EqualFold(v, "true"):
		return false
	}
	return holdsData(obj)
}

// KeepOnImmutableWhy says why KeepOnImmutable keeps an object.
func KeepOnImmutableWhy(obj *unstructured.Unstructured) string {
	if strings.EqualFold(obj.GetAnnotations()[RecreateAnnotation], "false") {
		return "it opts out: " + RecreateAnnotation + "=false"
	}
	return "recreating it would lose its data; " + RecreateAnnotation + "=true lets the syncer do it"
}

// holdsData tells whether an object's deletion may delete a volume's data.
func holdsData(obj *unstructured.Unstructured) bool {
	return obj.GetAPIVersion() == "v1" && (obj.GetKind() == "PersistentVolumeClaim" || obj.GetKind() == "PersistentVolume")
}

// ReplaceOnly tells whether the edge object actual cannot take the desired object in place, and
// why: the apiserver would keep the old value without an error, or refuse the change. So far one
// case: a Service changing between headless (clusterIP "None") and one with a cluster IP, which
// the edge keeps as it was when the applied object omits the IP it allocates.
func ReplaceOnly(desired, actual *unstructured.Unstructured) (string, bool) {
	if actual == nil || desired.GetAPIVersion() != "v1" || desired.GetKind() != "Service" {
		return "", false
	}
	headless := func(o *unstructured.Unstructured) bool {
		ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
		return ip == "None"
	}
	switch want, have := headless(desired), headless(actual); {
	case want && !have:
		return "the Service became headless (clusterIP None) and a cluster IP cannot be removed in place", true
	case !want && have:
		return "the Service is no longer headless (clusterIP None) and a cluster IP cannot be added in place", true
	}
	return "", false
}

// OwnerOf is the sync target a downstream object is labelled for (the OwnerLabel's value).
func OwnerOf(obj *unstructured.Unstructured) string { return obj.GetLabels()[OwnerLabel] }

// OwnedUpstream tells whether an upstream object carries an upsync mark for itself (its own
// Kind/namespace/name): a copy upsync wrote, this syncer's or another's, or an object made to look
// like one. Downsync and status return leave such objects alone; ClaimOf says whose it is.
func OwnedUpstream(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[UpsyncedAnnotation] == MarkOf(obj)
}

// UpsyncClaim is what an upstream object's upsync mark proves about who made it.
type UpsyncClaim int

const (
	// NotUpsynced: no upsync mark for the object itself (none, or one copied from another object).
	NotUpsynced UpsyncClaim = iota
	// UpsyncedByOther: a full mark with another syncer's UpsyncOwnerLabel.
	UpsyncedByOther
	// UpsyncedUnproven: the mark for the object itself, but not the edge UID upsync records (or no
	// owner label): made by hand, copied from a copy, or written before the syncer recorded UIDs.
	// Upsync may update it for an edge object it selects, and never deletes it.
	UpsyncedUnproven
	// UpsyncedByUs: the mark for the object itself, this syncer's owner label and the UID of the
	// edge object it copies; upsync may update and delete it.
	UpsyncedByUs
)

// ClaimOf tells what an upstream object's upsync mark proves, for the syncer whose owner label
// value is owner.
func ClaimOf(obj *unstructured.Unstructured, owner string) UpsyncClaim {
	if !OwnedUpstream(obj) {
		return NotUpsynced
	}
	switch label := obj.GetLabels()[UpsyncOwnerLabel]; {
	case label != "" && label != owner:
		return UpsyncedByOther
	case label == owner && obj.GetAnnotations()[UpsyncSourceUIDAnnotation] != "":
		return UpsyncedByUs
	default:
		return UpsyncedUnproven
	}
}

// UpsyncedFrom is the UID of the edge object an upstream copy was made from, as recorded in it.
func UpsyncedFrom(obj *unstructured.Unstructured) string {
	return obj.GetAnnotations()[UpsyncSourceUIDAnnotation]
}

// CreateOnly tells whether the object asks not to be overwritten (or deleted) by the syncer.
func CreateOnly(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(obj.GetAnnotations()[OverwriteAnnotation], "false")
}

var labelValueInvalid = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// OwnerLabelValue turns a sync target name into a valid label value: names that are not valid label
// values (too long, odd characters) are shortened and suffixed with a digest so that they stay unique.
func OwnerLabelValue(syncTargetName string) string {
	if syncTargetName == "" {
		return "syncer"
	}
	v := labelValueInvalid.ReplaceAllString(syncTargetName, "-")
	v = strings.Trim(v, "-_.")
	if v == syncTargetName && len(v) <= 63 {
		return v
	}
	sum := sha256.Sum256([]byte(syncTargetName))
	digest := hex.EncodeToString(sum[:])[:10]
	if len(v) > 52 {
		v = strings.Trim(v[:52], "-_.")
	}
	return v + "-" + digest
}
