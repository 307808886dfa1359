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

# shellcheck source=lib-build.sh
. "$here/lib-build.sh"
build_bin kcp-bins "$tools" "$KCP_BIN" kcp github.com/kcp-dev/kcp/cmd/kcp "$ldflags"
build_bin kcp-bins "$tools" "$KCP_BIN" crd-puller github.com/kcp-dev/kcp/cmd/crd-puller "$ldflags"
