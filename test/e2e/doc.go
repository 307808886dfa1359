// Package e2e holds the end-to-end tests: real etcd and kube-apiservers started by package testenv,
// and the syncer built from cmd/syncer and run as its own process, as users run it. TestMain starts
// the environment once; each test works in its own namespaces and names and runs its own syncer.
//
// Without the control-plane binaries the tests are skipped, unless E2E=1 demands them (as `make
// test-e2e` and CI do), in which case their absence fails the run.
package e2e
