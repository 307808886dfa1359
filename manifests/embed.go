// Package manifests holds the syncer's install manifests; the CRDs of SyncerConfig and EdgeSyncConfig
// are embedded so that the bootstrap plugin can install them.
package manifests

import _ "embed"

// SyncerConfigCRD is manifests/crds/edge.kubestellar.io_syncerconfigs.yaml.
//
//go:embed crds/edge.kubestellar.io_syncerconfigs.yaml
var SyncerConfigCRD []byte

// EdgeSyncConfigCRD is manifests/crds/edge.kubestellar.io_edgesyncconfigs.yaml.
//
//go:embed crds/edge.kubestellar.io_edgesyncconfigs.yaml
var EdgeSyncConfigCRD []byte
