// Package syncer wires the KubeStellar syncer's engine together: it reads every SyncerConfig
// upstream (and every EdgeSyncConfig, once upstream serves them), resolves them (the resolver: read
// configs → discover both sides → resolve the selection → find leftovers → diff the informer sets →
// start and stop informers) into an immutable snapshot, keeps one dynamic informer per resource and
// side running through pkg/informermanager, and feeds their events to the downsync, status and
// upsync controllers (pkg/downsync, pkg/status, pkg/upsync). It runs the heartbeat (pkg/conditions)
// and answers readiness.
//
// Upstream it writes only through those controllers and the heartbeat (status of SyncerConfigs and
// EdgeSyncConfigs, status of downsynced objects, upsynced copies) and through the Events they
// record; downstream only through the downsync controller. Decisions to delete are made from the
// marks on the objects (pkg/mapping), so a restarted syncer cleans up what left the selection while
// it was down; nothing is deleted before both sides' caches have synced, and objects whose API is
// merely missing upstream are held, not deleted.
package syncer
