#!/usr/bin/env bash
# Prints the -ldflags -X flags that stamp the version and git revision into a binary (read back by
# pkg/version: --version and the kubestellar_syncer_build_info metric). The version is
# `git describe --tags --always --dirty` ("dev" outside a git checkout), the revision
# `git rev-parse HEAD` (empty outside one: pkg/version then says what the Go toolchain recorded).
# VERSION and REVISION in the environment override both, e.g. for a release build:
#   make build VERSION=v0.1.0
# Used by `make build` and hack/build-static.sh (so by `make image` and `make image-check`).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}
pkg=github.com/kubestellar/syncer/pkg/version
echo "-X $pkg.version=$version -X $pkg.revision=$revision"
