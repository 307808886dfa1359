package mapping

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Per-target signals are annotations on an upstream object, one per sync target, whose key is
// <signal>.edge.kubestellar.io/<sync target>: what one edge says of the object, kept apart from what
// the others say. They are never copied to the edge.
const signalDomain = ".edge.kubestellar.io"

// ExecutingPrefix starts the key of the per-target signal that a sync target's edge runs a copy of
// the object whose status that syncer returns: executing.edge.kubestellar.io/<sync target>, its value
// the time it started (RFC 3339). Status return writes it before the object's first status, removes it
// when the edge copy goes or its status is no longer returned, and returns status only while no other
// target's is there (status.Controller).
const ExecutingPrefix = "executing" + signalDomain + "/"

// ExecutingAnnotation is a sync target's ExecutingPrefix annotation key; "" when the target's name
// cannot be an annotation name (over 63 characters, say).
func ExecutingAnnotation(syncTarget string) string {
	key := ExecutingPrefix + syncTarget
	if len(validation.IsQualifiedName(key)) > 0 {
		return ""
	}
	return key
}

// Executors are the sync targets an upstream object names as running it (ExecutingPrefix), sorted.
func Executors(up *unstructured.Unstructured) []string {
	var out []string
	for k := range up.GetAnnotations() {
		if target, ok := strings.CutPrefix(k, ExecutingPrefix); ok {
			out = append(out, target)
		}
	}
	sort.Strings(out)
	return out
}

// targetSignal tells whether an annotation is a per-target signal.
func targetSignal(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	return found && strings.HasSuffix(domain, signalDomain)
}
