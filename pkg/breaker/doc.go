// Package breaker is the deletion breaker: when the deletions at the edge that fall due weigh more
// than a limit allows — within a minute more than Options.Count, or within an hour more than
// Options.HourCount, and in both cases more than Options.Percent % of the objects the syncer owned
// there (the least it owned over the last hour, so that a mailbox cannot raise the share first), so
// that ordinary churn never trips it — it holds every deletion (creates and updates go on) until
// someone acknowledges them: a release naming at least the count held, made after the breaker
// tripped, from a source the engine trusts (the edge's release object; a SyncerConfig only where the
// site lets its mailbox release), which the engine passes to Consider. Each deletion waits a short
// grace period once due, so that the deletions one change makes due are counted together: one
// mistyped SyncerConfig then holds a site's workloads instead of deleting any of them. A deletion
// weighs what it takes with it (Allow's weight); downsync counts rewrites that empty an object like
// deletions.
//
// The breaker decides and remembers; it writes nothing. Downsync asks it before each deletion
// (Allow), the engine says what it holds on every SyncerConfig (condition DeletionsHeld) and
// re-enqueues the released keys. A syncer restarted while holding finds the same deletions due at
// once and holds them again, unless its limits were raised above them; it remembers no base, and
// counts against what it owns from its start.
package breaker
