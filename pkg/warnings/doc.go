// Package warnings tells the people upstream, who never see the edge, why their workload does not
// run there. Warning Events at the edge and the states of Pods' containers (waiting to be pulled,
// crash-looping, OOM-killed), about an object the syncer wrote or an object it owns (its ReplicaSets,
// its Pods), are recorded as Warning Events on that object's upstream original, naming the sync
// target and the edge object, so that `kubectl describe` upstream shows them.
//
// What is told is deduplicated: one reason on one upstream object is told at most once a Resend
// period (client-go's recorder then aggregates and rate-limits what reaches the upstream), so a crash
// loop costs the upstream a handful of writes a minute, not one per restart. Warnings older than
// MaxAge when seen (an Event listed at start) are not told.
//
// The edge informers this needs (Warning Events, Pods, ReplicaSets) are informermanager's, of kind
// Signals: their caches keep names, owners and what is told, not the objects. The package writes
// nothing at the edge and nothing upstream but Events.
package warnings
