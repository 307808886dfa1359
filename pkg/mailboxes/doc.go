// Package mailboxes serves many mailbox workspaces from one syncer: every kcp workspace bound to an
// APIExport, reached through the export's virtual workspace (the URL in its APIExportEndpointSlice)
// with kcp-dev/client-go's cluster-aware clients.
//
// The Controller watches the workspaces' APIBindings there and runs one engine (pkg/syncer) per
// bound workspace. The engines run no informers of their own: two informermanager.Hubs, one per side,
// run one list and one watch per resource (and label selector) for every workspace, and each engine
// reads its workspace's part through views (informermanager.Source); this package's Scopes say what
// a workspace's part is: upstream the objects of its logical cluster (kcp.io/cluster), at the edge the
// objects it wrote (mark mapping.ClusterAnnotation) and the edge's own objects in the namespaces
// mapped from the workspace.
//
// Isolation at the edge: namespace ns of workspace C lands in mapping.WorkspaceNamespace(C, ns); the
// engine keeps naming objects by their upstream namespaces, and its edge client and views translate
// (names, the downsync mark, the Namespace name label) both ways, so downsync, status return and
// upsync work unchanged. Cluster-scoped objects keep their names: two workspaces' objects of one name
// are a conflict the second engine reports (its SyncerConfig's condition, an Event), never an
// overwrite. Namespaces learns the origin of every mapped edge namespace from the edge's Namespaces
// (their marks), so it holds across restarts.
//
// A workspace that unbinds (or, found from the marks at start, is no longer bound) is drained: its
// engine reads no configs, so everything it wrote at the edge leaves the selection and is deleted,
// and the engine stops once nothing it would delete is left. A workspace that binds starts an
// engine, without a restart.
package mailboxes
