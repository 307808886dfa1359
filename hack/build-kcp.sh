#!/usr/bin/env bash
# Builds kcp and crd-puller from the tools module hack/e2e/kcptools into $KCP_BIN (a cache folder keyed by
# version, outside the work tree). A binary that is already there is kept: the folder name changes with
# the pin, so a version bump builds afresh.
# The first build of kcp takes about 8 minutes on 2 cores; progress is printed so nobody thinks it hung.
set -euo pipefail
: "${KCP_BIN:?KCP_BIN must name the cache folder}"
KCP_VERSION=${KCP_VERSION:-v0.31.2}
here=$(cd "$(dirname "$0")" && pwd)
tools=$here/e2e/kcptools
if ! grep -q "^require github.com/kcp-dev/kcp $KCP_VERSION\b" "$tools/go.mod"; then
  echo "kcp-bins: $tools/go.mod does not pin kcp $KCP_VERSION; run KCP=$KCP_VERSION hack/e2e/gen-kcptools.sh" >&2
  exit 1
fi
# The kube version kcp is based on, as kcp's own Makefile takes it: k8s.io/kubernetes in the require list.
kube=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v[0-9]/ {print $2; exit}' "$tools/go.mod")
: "${kube:?no k8s.io/kubernetes requirement in $tools/go.mod}"
rest=${kube#v}; major=${rest%%.*}; rest=${rest#*.}; minor=${rest%%.*}
ldflags="-s -w"
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $p.gitVersion=$kube+kcp-$KCP_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
mkdir -p "$KCP_BIN"

build() { # name package
  local name=$1 pkg=$2 start
  if [ -x "$KCP_BIN/$name" ]; then echo "kcp-bins: $name is cached in $KCP_BIN"; return; fi
  start=$(date +%s)
  echo "kcp-bins: building $name from $pkg (cold: minutes; a progress line follows every 30s)"
  ( while sleep 30; do echo "kcp-bins: ... still building $name ($(( $(date +%s) - start ))s)"; done ) &
  local ticker=$!
  trap 'kill $ticker 2>/dev/null || true' RETURN
  go build -C "$tools" -trimpath -ldflags "$ldflags" -o "$KCP_BIN/$name.tmp" "$pkg"
  mv "$KCP_BIN/$name.tmp" "$KCP_BIN/$name"
  echo "kcp-bins: built $name in $(( $(date +%s) - start ))s"
}

build kcp github.com/kcp-dev/kcp/cmd/kcp
build crd-puller github.com/kcp-dev/kcp/cmd/crd-puller
