// Package fakeinformers serves caches whose objects a unit test gives directly, for controllers that
// read through framework.Informers. The objects are held as the syncer's informers hold them (see
// With), every cache counts as synced and complete, and handlers hear nothing: tests call the
// controllers' handlers themselves.
package fakeinformers
