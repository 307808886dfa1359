// Package version owns what a binary of this repository says about its own build: the version and
// git revision the build stamped into it, the Go version and the platform. Both commands print it for
// --version, and the syncer exports it as the kubestellar_syncer_build_info metric.
//
// The version and revision are set by the linker (-ldflags "-X ..."; hack/version-ldflags.sh makes
// the flags for `make build` and hack/build-static.sh from `git describe --tags --always --dirty` and
// `git rev-parse HEAD`). When a plain `go build` leaves them empty, they come from the build
// information the Go toolchain records (the main module's version, vcs.revision), so that what is
// printed is still true. These two package-level variables are the one accepted exception to the
// rule of no global state: the linker can set nothing else, and nothing in the program writes them.
// This package must not hold any other state, and it must not import the rest of the repository.
package version
