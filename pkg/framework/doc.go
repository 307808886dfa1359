// Package framework is the syncer's small controller framework, shared by the downsync, status and
// upsync controllers: the typed key every queue uses, a named rate-limited queue whose workers own
// retries, the form the informer caches hold objects in (Compact: their JSON) and the read helpers
// that decode it, and the one write path of the three directions (deleting
// an owned object, reporting conflicts, counting and logging writes). It knows nothing of the
// selection and makes no decision about what to write.
package framework
