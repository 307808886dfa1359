// Package problem holds the syncer's problems as values: what went wrong (a Kind), where (the
// SyncerConfig and field, the resource, the object) and why. The resolver and the controllers make
// them; the edges render them once — conditions on SyncerConfigs, log lines, Events — and attribute
// them to SyncerConfigs by their Config field, never by matching text. It holds no state.
package problem
