// Package release checks what `make release` makes (`make release-check` makes a release and runs
// these tests on it): every file its SHA256SUMS names, the binaries' versions, the plugin archives
// as krew installs them, the chart package, the krew manifest's checksums and the image's OCI layout.
package release
