// Package logging names the klog verbosity levels the syncer uses, so that `-v` means the same in
// every package. It holds constants only.
package logging

const (
	// Lifecycle is for start, stop, configuration and problems a user must see (always shown).
	Lifecycle = 0
	// Change is one line per change applied to a cluster (create, update, delete, status written).
	Change = 2
	// Detail is the detail of a change: why it was made, what it contained.
	Detail = 3
	// Skip is for decisions not to write and for why an item was enqueued.
	Skip = 4
	// Trace follows every step of every item.
	Trace = 5
)
