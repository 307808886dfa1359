// Package conditions computes what the syncer tells users on every SyncerConfig's status — the
// conditions Ready, SelectionValid, ObjectsSynced, UpstreamReachable and DownstreamReachable — and
// writes them, with lastSyncerHeartbeatTime, by server-side apply of the status subresource once per
// heartbeat period. Problems arrive as values (pkg/problem) and are attributed to configs by their
// Config field; messages are bounded however many objects fail. It writes nothing but SyncerConfig
// status, and keeps no state but whether the last beat failed.
package conditions
