// Package informermanager owns the lifecycle of dynamic informers, one per GroupVersionResource, for
// one side (upstream or downstream). The engine tells it which resources it wants (Set); it starts
// what is missing and stops what is no longer wanted.
//
// Each informer has its own context: stopping one cancels it, removes its event handler and waits
// for its goroutines to exit, so that removing a resource leaves nothing behind (the Kubernetes
// garbage collector leaked handlers here, kubernetes#114066). The manager keeps only what the syncer
// needs in the caches, and holds it as JSON (framework.Compact, which its readers decode): a decoded
// object's maps cost about twice its JSON. managedFields are dropped, but for the update entry of a
// plain create by the syncer, kept without its fields (Spec.Manager, mapping.CreatedEntries). A slim
// cache (Spec.AppliedBy, for the edge objects only downsync writes) keeps metadata, status and the
// fields the syncer's apply manager owns with a digest of each value, instead of the objects'
// content (mapping.Slim).
// The informers a Source runs (many workspaces) hold decoded objects: their views filter them. It
// makes no decisions about what to sync.
//
// A resource may be watched in some namespaces only (Spec.Namespaces): the manager then lists and
// watches each namespace through its namespaced path, one informer each, and shows them to the
// engine as one informer (its store read by namespace, its handlers added to each, synced once all
// are). A changed namespace scope keeps the namespaces that stay and starts and stops the others.
// With a Source (one syncer serving many workspaces) the scope is not passed on: the source's views
// already show each engine only its own objects.
package informermanager
