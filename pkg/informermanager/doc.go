// Package informermanager makes, runs and stops every informer of the syncer, and shows each as a
// framework.Cache: the selected resources of one side (Manager.Set), the engine's own watches of
// configs and APIs (Manager.Watch), and, for one syncer serving many workspaces, the shared
// informers of a side (Hub) seen by each workspace's engine through a Scope. It decides nothing about
// what to sync.
//
// An informer is client-go's Reflector (lists, watches, watch-lists, back-off) into a store of this
// package's, which tells its handlers in order from a goroutine each, and says what client-go's
// informers do not: when a re-list after a dropped watch has replaced the cache (Cache.Complete, and
// Handlers.Synced told again), so that what was decided while the cache was behind is looked at again.
//
// Caches hold what the syncer needs, as JSON (framework.Compact): managedFields dropped but for the
// update entry of a plain create by the syncer (Spec.Manager); a slim cache (Spec.AppliedBy) keeps
// metadata, status and the digest of the fields the syncer's apply manager owns (mapping.Slim). A
// Hub's informers hold decoded objects, which the Scopes filter and translate.
//
// A resource selected in some namespaces (Spec.Namespaces) is listed and watched one namespace at
// a time (at most Options.ListingNamespaces listing at once), each namespace usable as soon as it is
// listed; past Options.MaxNamespaces namespaces, where the syncer may list it cluster-wide, one
// cluster-wide informer keeps those namespaces' objects. A changed scope keeps the namespaces that
// stay.
package informermanager
