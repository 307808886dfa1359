// Package status is the status-return controller: when the .status of an object the syncer
// downsynced changes at the edge, it writes that status to the upstream object, through the status
// subresource where the upstream resource has one and otherwise with an update that changes only
// .status. The generations in it (status.observedGeneration, each condition's observedGeneration)
// are written in upstream terms (mapping.ReturnedStatus): the upstream generation the edge has
// observed, never one it has not. It watches (the engine's informers feed its "status" queue) and
// writes nothing when the two statuses are already equal. CRDs and Namespaces never have their status
// returned: their upstream status belongs to the upstream apiserver.
package status
