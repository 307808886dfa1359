// Package syncer is the engine of the KubeStellar syncer. It reads every SyncerConfig upstream, merges
// them into one selection, resolves that against both sides' discovery, keeps one dynamic informer per
// resource and side running (through pkg/informermanager), and runs the downsync controller: a typed,
// rate-limited workqueue keyed by {GVR, namespace, name} whose workers make each downstream object
// match its upstream counterpart.
//
// Decisions are made from the marks on the objects (pkg/mapping), not from memory, so a restarted
// syncer cleans up what left the selection while it was down. Nothing is deleted downstream before
// the caches of both sides have synced, and an object whose API is merely missing upstream is held,
// not deleted. Status return and upsync live in pkg/status and pkg/upsync; this package must not
// write upstream.
package syncer
