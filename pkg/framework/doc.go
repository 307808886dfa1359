// Package framework is the syncer's small controller framework, shared by the downsync, status and
// upsync controllers: the typed key every queue uses, a named rate-limited queue whose workers own
// retries, the form the informer caches hold objects in (Compact: their JSON) and the read helpers
// that decode it, and the one write path of the three directions: a create or update taken through
// named steps (Write, Writes.Do: ownership, up to date, loop backoff, write, record), deleting an
// owned object, reporting conflicts, counting and logging writes. It also runs the engine's loops
// that are not about objects (RunLoop: one key, retried slowly), and the one scan of a side for
// objects carrying the syncer's marks (ScanLabelled). It knows nothing of the selection and makes no
// decision about what to write.
package framework
