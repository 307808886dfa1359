#!/usr/bin/env bash
# make release VERSION=v0.1.0: everything a release publishes, in _output/release/<version>/
# ($RELEASE_OUT overrides):
#   syncer_<version>_linux_{amd64,arm64}                      the syncer, static (what the image runs)
#   kubectl-kubestellar-syncer_gen_<version>_<os>_<arch>.tar.gz the kubectl plugin for linux and darwin,
#                                                              amd64 and arm64, as krew installs it
#   kubestellar-syncer_<version>_image.oci.tar                the image (linux/amd64 and arm64) as an
#                                                              OCI layout: skopeo copy oci-archive:... docker://<registry>/...
#   kubestellar-syncer-<version without v>.tgz                the Helm chart, its appVersion the version
#   kubestellar.yaml                                          the krew manifest, with these archives' checksums
#   SHA256SUMS                                                sha256sum of each of the above
# Binaries are stamped with the version (--version); binaries, archives and image are reproducible
# from the commit (its time); helm stamps the chart package with the time it makes it.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-}
n='(0|[1-9][0-9]*)'
[[ $VERSION =~ ^v$n\.$n\.$n(-[0-9A-Za-z.-]+)?$ ]] || {
  echo "release: VERSION must be a release tag such as v0.1.0 (got \"$VERSION\")" >&2; exit 1; }
export VERSION
HELM_BIN=${HELM_BIN:?release: HELM_BIN is the helm binary (make helm-bin)}
# What is released is the commit: its revision is stamped in and its time makes the files.
if [ -z "${RELEASE_ALLOW_DIRTY:-}" ] && { ! git diff --quiet HEAD -- || [ -n "$(git ls-files --others --exclude-standard)" ]; }; then
  echo "release: the working tree differs from the commit; commit first (RELEASE_ALLOW_DIRTY=1 to build anyway)" >&2; exit 1
fi
out=${RELEASE_OUT:-_output/release/$VERSION} # relative to the repository's root
case $out in /*) ;; *) out=$PWD/$out ;; esac
if [ -e "$out" ] && [ ! -e "$out/SHA256SUMS" ] && [ -n "$(ls -A "$out")" ]; then
  echo "release: $out holds something that is not a release: not replacing it" >&2; exit 1
fi
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
rm -rf "$out" && mkdir -p "$out"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
ldflags="-s -w -buildid= $(bash hack/version-ldflags.sh)"

for arch in amd64 arm64; do
  GOARCH=$arch bash hack/build-static.sh "$out/syncer_${VERSION}_linux_$arch"
done
for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  os=${p%/*} arch=${p#*/}
  mkdir -p "$tmp/$os-$arch"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$tmp/$os-$arch/kubectl-kubestellar-syncer_gen" ./cmd/kubectl-kubestellar-syncer_gen
  tar -C "$tmp/$os-$arch" --format=gnu --sort=name --mtime="@$created" --owner=0 --group=0 --numeric-owner --mode=0755 \
    -cf - kubectl-kubestellar-syncer_gen | gzip -n >"$out/kubectl-kubestellar-syncer_gen_${VERSION}_${os}_$arch.tar.gz"
done
IMAGE=${RELEASE_IMAGE:-kubestellar-syncer:$VERSION} IMAGE_OUT=$tmp/image IMAGE_PLATFORMS="linux/amd64 linux/arm64" IMAGE_PUSH= \
  bash hack/build-image.sh
cp "$tmp/image/syncer-image.oci.tar" "$out/kubestellar-syncer_${VERSION}_image.oci.tar"
"$HELM_BIN" package charts/kubestellar-syncer --version "${VERSION#v}" --app-version "$VERSION" -d "$out" >/dev/null
go run ./hack/krewmanifest -template plugins/kubestellar.yaml -tag "$VERSION" -dir "$out" >"$out/kubestellar.yaml"
(cd "$out" && sha256sum -- * >SHA256SUMS)
echo "release: $VERSION in $out:"
(cd "$out" && ls -l)
