// Package report holds what the syncer would write at the edge in report-only mode (--report-only, or
// a SyncerConfig's spec.reportOnly): each object it would create, update (the fields that would
// change, as the edge's server-side dry-run of the apply shows them) or delete, whose write the edge
// would refuse, or which it may not take (an object of that name without its mark). Downsync fills
// the Store instead of writing; the heartbeat publishes a Summary on each SyncerConfig's
// status.syncTargets entry; the whole report is served as JSON (Store.ServeHTTP, /report).
package report
