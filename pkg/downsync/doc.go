// Package downsync is the downsync controller: one named, rate-limited queue keyed by
// {GVR, namespace, name} whose workers make each downstream object match its upstream counterpart —
// created (a plain create) or updated (server-side apply) when it is selected, deleted when it is
// owned and no longer selected (or gone upstream), held when its API is merely missing upstream.
// Before an object's first apply, the fields of its create are handed to the apply manager. The
// edge event of its own write (the resourceVersion the write returned) is not queued again.
//
// Each key is gathered once from both caches, then taken through the per-object policies as named
// gates, in the order gates.go lists them (keyGates, then writeGates or deleteGates; the gates are in
// checks.go, each policy's state in its own file), then through the write steps or the deletion.
//
// It reads both sides only through informer caches and writes only downstream, through the shared
// write path of pkg/framework (which also records Events on upstream objects). It never writes an
// object without the syncer's mark unless told to adopt, and never touches a Namespace that existed
// before it. What is selected comes from a Selection view the engine provides; this package does not
// resolve configs or run informers.
package downsync
