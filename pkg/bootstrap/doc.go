// Package bootstrap is the logic of `kubectl kubestellar syncer-gen`: it creates the syncer's
// identity in the mailbox workspace (ServiceAccount, ClusterRole, ClusterRoleBinding, a token from
// TokenRequest stored in a Secret, the SyncerConfig CRD when missing, and the optional EdgeSyncConfig CRD) and renders the manifest that
// runs the syncer in the edge cluster (Namespace, ServiceAccount, token Secret, RBAC, kubeconfig
// Secret, Deployment), or the values that make the Helm chart charts/kubestellar-syncer install the
// same (HelmValues). The syncer ID is stable for a name and an upstream endpoint, and the upstream
// objects are written by server-side apply (field manager kubestellar-syncer-gen), so running it
// again updates the same objects in place. It checks first that the endpoint is reachable and that
// the caller may do all of this, and fails fast with a clear message otherwise.
package bootstrap
