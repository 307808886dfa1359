package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// UpstreamNamespaceAnnotation records, on a downstream object of a syncer that serves several
// workspaces, the namespace of its upstream object (on a Namespace: the upstream Namespace's name);
// ClusterAnnotation records the workspace. Absent for a single workspace.
const UpstreamNamespaceAnnotation = "edge.kubestellar.io/upstream-namespace"

// workspaceHashLen is how many hex digits of the digest of (logical cluster, namespace) an edge
// namespace name ends with: 40 bits, so that two workspaces' namespaces meet by chance about once in
// a million million pairs; a meeting is detected from the marks and reported, never overwritten.
const workspaceHashLen = 10

// WorkspaceNamespace is the edge namespace that namespace ns of the workspace (kcp logical cluster)
// cluster maps to when one syncer serves several workspaces: the upstream name, cut to at most 52
// characters, a dash, and the first 10 hex digits of sha256("<cluster>/<ns>"); at most 63
// characters, a valid namespace name whenever ns is one, the same on every run and every syncer.
func WorkspaceNamespace(cluster, ns string) string {
	sum := sha256.Sum256([]byte(cluster + "/" + ns))
	prefix := ns
	if max := 63 - 1 - workspaceHashLen; len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.TrimRight(prefix, "-")
	return prefix + "-" + hex.EncodeToString(sum[:])[:workspaceHashLen]
}
