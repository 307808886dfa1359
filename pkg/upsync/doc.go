// Package upsync is the upsync controller: objects created at the edge that the SyncerConfigs'
// upsync entries select are copied to the mailbox workspace, with the annotation
// edge.kubestellar.io/upsynced=<Kind>/<namespace>/<name>, updated when they change (status
// included) and deleted upstream when they are deleted at the edge or leave the selection.
//
// Upsync only updates or deletes upstream objects that carry its mark: an unmarked upstream object
// of the same name is a reported conflict and is left alone. Objects the syncer downsynced are never
// upsynced. The namespace of an upsynced object is created upstream when it is missing (and never
// deleted by the syncer). The controller is driven by the engine's informers through its "upsync"
// queue; it reads both sides from caches and writes only when something differs.
package upsync
