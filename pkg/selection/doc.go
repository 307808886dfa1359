// Package selection merges every SyncerConfig and legacy EdgeSyncConfig of a mailbox workspace
// (each EdgeSyncConfig read as the SyncerConfig FromEdgeSyncConfig makes of it) into one Selection
// and answers the two questions the engine asks of it: which resources must be watched (Resolve,
// against the discovery of both sides), and whether a given object is selected (Matches): by its
// resource or kind, namespace and name, and the label and annotation selectors of the entries that
// name it. PolicyOf answers, at once, how the configs that select an object want it synced: retained
// fields, drift policy, pause, report-only, deletion (Policy); status return is StatusProjection.
//
// Matching depends on the configs alone, never on discovery, so that an API that is briefly missing
// upstream is never mistaken for a deselected one: the engine holds such objects instead of
// deleting them. The package is pure: no clients, no I/O, no logging.
package selection
