// Package informermanager owns the lifecycle of dynamic informers, one per GroupVersionResource, for
// one side (upstream or downstream). The engine tells it which resources it wants (Set); it starts
// what is missing and stops what is no longer wanted.
//
// Each informer has its own context: stopping one cancels it, removes its event handler and waits
// for its goroutines to exit, so that removing a resource leaves nothing behind (the Kubernetes
// garbage collector leaked handlers here, kubernetes#114066). The manager keeps only what the syncer
// needs in the caches (managedFields are dropped,
// and field names are shared between objects cached close together). It makes no decisions about what to sync.
package informermanager
