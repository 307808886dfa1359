#!/usr/bin/env bash
# Regenerates hack/e2e/kcptools/go.mod and go.sum: a second tools module, outside the project's main
# module, that builds kcp and crd-puller from the Go module proxy (hack/build-kcp.sh).
# Run only when bumping KCP; the generated files are committed, and with them a plain `go build` needs
# neither this script's settings nor any checksum-database look-up.
#
# Adjustments to a verbatim copy of kcp's replaces (see shared/research/control-planes.md §3):
#  - kcp replaces k8s.io/* by its fork github.com/kcp-dev/kubernetes/staging/src/k8s.io/<m> at one
#    pseudo-version; the proxy does not serve that version of six of them, so those use upstream
#    k8s.io/<m> $UPSTREAM_K8S (kcp builds and runs fine with them);
#  - kcp's own staging (./staging/...) becomes the published modules at the same tag;
#  - the checksum database lacks github.com/kcp-dev/embeddedetcd at the version kcp needs, hence
#    GONOSUMDB for it while generating; its hash then sits in go.sum like every other.
set -euo pipefail
KCP=${KCP:-v0.31.2}
UPSTREAM_K8S=${UPSTREAM_K8S:-v0.35.1}   # kcp $KCP's k8s.io/* base version
export GONOSUMDB=github.com/kcp-dev/embeddedetcd   # only needed while (re)generating go.sum
dir=$(cd "$(dirname "$0")" && pwd)/kcptools
mkdir -p "$dir" && cd "$dir"
rm -f go.mod go.sum
modfile=$(go mod download -json "github.com/kcp-dev/kcp@$KCP" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  printf 'module example.invalid/e2e/kcptools\n\ngo 1.25.0\n\nrequire github.com/kcp-dev/kcp %s\n\nreplace (\n' "$KCP"
  awk -v up="$UPSTREAM_K8S" '$2=="=>" && $3 ~ /^github.com\/kcp-dev\/kubernetes/ {
        if ($1 ~ /^k8s.io\/(cluster-bootstrap|controller-manager|cri-api|cri-client|csi-translation-lib|endpointslice)$/) print "\t" $1 " => " $1 " " up;
        else print "\t" $1 " => " $3 " " $4 }' "$modfile"
  printf '\tgithub.com/kcp-dev/apimachinery/v2 => github.com/kcp-dev/apimachinery/v2 v2.%s\n' "${KCP#v0.}"
  for m in client-go sdk virtual-workspace-framework; do printf '\tgithub.com/kcp-dev/%s => github.com/kcp-dev/%s %s\n' $m $m "$KCP"; done
  printf ')\n'
} > go.mod
go get -tool "github.com/kcp-dev/kcp/cmd/kcp@$KCP" "github.com/kcp-dev/kcp/cmd/crd-puller@$KCP"
go mod tidy
