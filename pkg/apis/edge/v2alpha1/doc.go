// Package v2alpha1 holds the Go types of the edge.kubestellar.io/v2alpha1 API that the syncer reads
// upstream: SyncerConfig, schema-compatible with KubeStellar release-0.14 so that existing objects keep
// working.
//
// The syncer reads these objects through dynamic informers and converts them with FromUnstructured;
// the package therefore owns only plain types and their conversion, never a client, a scheme
// registration or global state. The CRD that serves them lives in manifests/crds; its descriptions
// are the doc comments of SyncerConfig and of the fields of types.go, word for word (crd_test.go
// checks that they agree, and that every field of the CRD is described).
package v2alpha1
