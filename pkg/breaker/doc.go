// Package breaker is the deletion breaker: when more deletions at the edge fall due within a sliding
// window than a limit allows — more than Options.Count and more than Options.Percent % of the objects
// the syncer owns there, both, so that ordinary churn never trips it — it holds every deletion
// (creates and updates go on) until someone acknowledges them: a release naming at least the count
// held, made after the breaker tripped (a SyncerConfig's annotation, which the engine passes to
// Consider). Each deletion waits a short grace period once due, so that the deletions one change
// makes due are counted together: one mistyped SyncerConfig then holds a site's workloads instead of
// deleting any of them.
//
// The breaker decides and remembers; it writes nothing. Downsync asks it before each deletion
// (Allow), the engine says what it holds on every SyncerConfig (condition DeletionsHeld) and
// re-enqueues the released keys. A syncer restarted while holding finds the same deletions due at
// once and holds them again, unless its limits were raised above them.
package breaker
