#!/usr/bin/env bash
# Builds the syncer as the container image does: a static, stripped, reproducible linux/amd64 (or
# $GOARCH) binary, its version and git revision stamped by hack/version-ldflags.sh (--version, the
# build_info metric). Used by hack/build-image.sh and by `make image-check`.
set -euo pipefail
out=${1:?usage: build-static.sh <output path>}
cd "$(dirname "$0")/.."
CGO_ENABLED=0 GOOS=linux GOARCH=${GOARCH:-amd64} go build -trimpath -ldflags "-s -w -buildid= $(bash hack/version-ldflags.sh)" -o "$out" ./cmd/syncer
