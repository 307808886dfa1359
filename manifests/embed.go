// Package manifests holds the syncer's install manifests; the SyncerConfig CRD is embedded so that
// the bootstrap plugin can install it.
package manifests

import _ "embed"

// SyncerConfigCRD is manifests/crds/edge.kubestellar.io_syncerconfigs.yaml.
//
//go:embed crds/edge.kubestellar.io_syncerconfigs.yaml
var SyncerConfigCRD []byte
