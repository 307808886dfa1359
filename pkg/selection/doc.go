// Package selection merges every SyncerConfig of a mailbox workspace into one Selection and answers
// the two questions the engine asks of it: which resources must be watched (Resolve, against the
// discovery of both sides), and whether a given object is selected (Matches).
//
// Matching depends on the configs alone, never on discovery, so that an API that is briefly missing
// upstream is never mistaken for a deselected one: the engine holds such objects instead of deleting
// them. The package is pure: no clients, no I/O, no logging.
package selection
