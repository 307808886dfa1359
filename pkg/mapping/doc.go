// Package mapping turns an upstream object into the object the syncer applies downstream, and owns
// the marks that make up the ownership contract (the downsynced annotation and the watch label).
//
// It is pure: object in, object out, no clients and no logging. It strips what belongs to the
// source cluster (identity, bookkeeping, status, fields the destination allocates), adds the marks,
// and decides whether a downstream object already carries everything a desired object asks for, so
// that the syncer can skip writes that would change nothing.
package mapping
