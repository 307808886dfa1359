#!/usr/bin/env bash
# Builds the syncer's OCI image without a container engine or a base image (make image): the static
# binary for each of $IMAGE_PLATFORMS by hack/build-static.sh, then the image by hack/image (its own
# Go module, go-containerregistry): a distroless-style static base layer (passwd and group with
# nonroot 65532, nsswitch.conf, this machine's CA bundle from Debian's ca-certificates, /tmp,
# /home/nonroot) and /syncer, user 65532:65532, entrypoint /syncer, OCI labels. It writes under
# $IMAGE_OUT an OCI layout (layout/, an index of the platforms) and two tarballs, for `docker load`
# (syncer-image.docker.tar, the first platform's image; syncer-image.oci.tar, the whole layout). IMAGE names it;
# IMAGE_PUSH=1 also pushes it there (credentials as `docker login` stores them). Reproducible: file
# and config times are the commit's ($SOURCE_DATE_EPOCH overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-kubestellar-syncer:dev}
IMAGE_PLATFORMS=${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}
IMAGE_OUT=${IMAGE_OUT:-_output/image}
case $IMAGE_OUT in /*) ;; *) IMAGE_OUT=$PWD/$IMAGE_OUT ;; esac
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }
start=$(date +%s.%N)
ldflags=$(bash hack/version-ldflags.sh)
version=$(sed -nE 's/.*pkg\/version\.version=([^ ]*).*/\1/p' <<<"$ldflags")
revision=$(sed -nE 's/.*pkg\/version\.revision=([^ ]*).*/\1/p' <<<"$ldflags")
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
args=()
for p in $IMAGE_PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  [ "$os" = linux ] || { echo "build-image: $p: only linux platforms" >&2; exit 1; }
  bin=$IMAGE_OUT/bin/${os}_$arch/syncer
  t0=$(date +%s.%N)
  GOARCH=$arch bash hack/build-static.sh "$bin"
  echo "build-image: built $bin for $p in $(since "$t0")"
  args+=(-binary "$p=$bin")
done
push=false
case ${IMAGE_PUSH:-} in 1|true|yes) push=true ;; esac
go run -C hack/image . -out "$IMAGE_OUT" -tag "$IMAGE" -version "$version" -revision "$revision" \
  -created "$created" -push="$push" "${args[@]}"
echo "build-image: $IMAGE built in $(since "$start") (binaries and image)"
