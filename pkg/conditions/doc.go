// Package conditions computes what the syncer tells users on the status of every SyncerConfig and
// EdgeSyncConfig — the conditions Ready, SelectionValid, ObjectsSynced, UpstreamReachable,
// DownstreamReachable, DeletionsHeld and ReportOnly — and writes them, with
// lastSyncerHeartbeatTime, by server-side apply of the status subresource once per heartbeat
// period. Problems arrive as values (pkg/problem) and are attributed to configs by their ConfigKind
// and Config fields; messages are bounded however many objects fail. It writes nothing but the
// configs' status, and keeps no state but whether the last beat failed.
package conditions
