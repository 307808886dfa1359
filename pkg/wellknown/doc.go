// Package wellknown declares, once, the resources the syncer treats in a way of their own:
// Namespaces (objects wait for theirs; their status is the apiserver's), CustomResourceDefinitions
// (they bring APIs; their status is the apiserver's) and kcp's APIBindings (they bring APIs to a
// workspace); the admission policies no fence can hold; and a ServiceAccount's user name. It holds
// fixed values only, no state.
package wellknown
