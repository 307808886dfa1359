// Package wellknown declares, once, the resources the syncer treats in a way of their own:
// Namespaces (objects wait for theirs; their status is the apiserver's), CustomResourceDefinitions
// (they bring APIs; their status is the apiserver's) and kcp's APIBindings (they bring APIs to a
// workspace); the admission policies no fence can hold, and what a fence keeps out unless the edge
// owner allows it by name (the resources that act on the whole cluster, and the named opt-ins); and a ServiceAccount's user name. It holds
// fixed values only, no state.
package wellknown
