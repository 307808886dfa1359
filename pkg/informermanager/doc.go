// Package informermanager owns the lifecycle of dynamic informers, one per GroupVersionResource, for
// one side (upstream or downstream). The engine tells it which resources it wants (Set); it starts
// what is missing and stops what is no longer wanted.
//
// Each informer has its own context: stopping one cancels it, removes its event handler and waits
// for its goroutines to exit, so that removing a resource leaves nothing behind (the Kubernetes
// garbage collector leaked handlers here, kubernetes#114066). The manager keeps only what the syncer
// needs in the caches (managedFields are dropped, and field names are shared between objects cached
// close together). A slim cache (Spec.AppliedBy, for the edge objects only downsync writes) keeps
// metadata, status and the digest of the fields the syncer's apply manager owns instead of the
// objects' content (mapping.Slim). It makes no decisions about what to sync.
//
// A resource may be watched in some namespaces only (Spec.Namespaces): the manager then lists and
// watches each namespace through its namespaced path, one informer each, and shows them to the
// engine as one informer (its store read by namespace, its handlers added to each, synced once all
// are). A changed namespace scope keeps the namespaces that stay and starts and stops the others.
// With a Source (one syncer serving many workspaces) the scope is not passed on: the source's views
// already show each engine only its own objects.
package informermanager
