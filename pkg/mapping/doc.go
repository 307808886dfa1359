// Package mapping is how an object looks on each side, and what the syncer writes on objects to
// keep track of them: pure functions of objects, no clients and no logging.
//
//   - Downward (downstream.go): ToDownstream strips what belongs to the source cluster (identity,
//     bookkeeping, status, fields the destination allocates) and adds the marks; UpToDate tells
//     whether an edge copy already carries everything a desired object asks for, against a whole
//     object or the slim form edge caches keep (applied.go: Slim, the digests of the fields the apply
//     manager owns), so that writes that would change nothing are skipped. Changes lists what a
//     write would change (report-only).
//   - Upward (upstream.go): ToUpstream, the copies upsync writes; status return's projection and
//     generations (projection.go, generation.go).
//   - The ownership contract (marks.go, workspace.go, system.go): the marks and labels of a written
//     object, whose copy is whose, the objects apiservers make themselves.
//   - Renaming between the sides (convert.go: conversions, denatured upstream and natural at the edge).
//   - The per-object policies' object-level parts: pauses (pause.go), retained fields (retain.go),
//     drift and its holds (drift.go: what differs, who changed it, the notes of a hold and what puts
//     it back), objects over the size limit (toolarge.go), and the per-target signals the syncer
//     writes upstream (targets.go, reported.go).
package mapping
