package mapping

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Per-target signals are labels on an upstream object, one per sync target, whose key is
// <signal>.edge.kubestellar.io/<sync target>: what one edge says of the object, kept apart from what
// the others say. Labels, not annotations: an annotation changed on a Deployment makes a new
// generation of it (a label does not), and tools can select on them. They are never copied to the
// edge.
const signalDomain = ".edge.kubestellar.io"

// ExecutingPrefix starts the key of the per-target signal that a sync target's edge runs a copy of
// the object whose status that syncer returns: label executing.edge.kubestellar.io/<sync target>:
// "true". Status return writes it before the object's first status, removes it when the edge copy
// goes or its status is no longer returned, and returns status only while no other target's is there
// (status.Controller).
const ExecutingPrefix = "executing" + signalDomain + "/"

// ExecutingLabel is a sync target's ExecutingPrefix label key; "" when the target's name cannot be a
// label name (over 63 characters, say).
func ExecutingLabel(syncTarget string) string { return signalKey(ExecutingPrefix, syncTarget) }

// signalKey is the key of a per-target signal; "" when it cannot be a label key.
func signalKey(prefix, syncTarget string) string {
	key := prefix + syncTarget
	if len(validation.IsQualifiedName(key)) > 0 {
		return ""
	}
	return key
}

// Executors are the sync targets an upstream object names as running it (ExecutingPrefix), sorted.
func Executors(up *unstructured.Unstructured) []string {
	var out []string
	for k := range up.GetLabels() {
		if target, ok := strings.CutPrefix(k, ExecutingPrefix); ok {
			out = append(out, target)
		}
	}
	sort.Strings(out)
	return out
}

// targetSignal tells whether a label (or annotation) key is a per-target signal's.
func targetSignal(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	return found && strings.HasSuffix(domain, signalDomain)
}
