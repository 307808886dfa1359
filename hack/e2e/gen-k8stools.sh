#!/usr/bin/env bash
# Regenerates hack/e2e/k8stools/go.mod and go.sum: a tools module, outside the project's main module,
# that builds etcd, kube-apiserver, kube-controller-manager and kubectl, and the edge node's kubelet,
# kube-scheduler and kube-proxy (hack/build-k8s-bins.sh), from the Go module proxy.
# Run only when bumping K8S or ETCD; the generated files are committed.
set -euo pipefail
K8S=${K8S:-1.35.4}        # k8s.io/kubernetes release
ETCD=${ETCD:-v3.6.5}      # etcd server version that k8s.io/kubernetes@v$K8S already requires
dir=$(cd "$(dirname "$0")" && pwd)/k8stools
mkdir -p "$dir" && cd "$dir"
rm -f go.mod go.sum
modfile=$(go mod download -json "k8s.io/kubernetes@v$K8S" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  printf 'module example.invalid/e2e/k8stools\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S"
  # k8s.io/kubernetes replaces every staging module with ./staging/src/...; point each at its v0.X.Y tag.
  awk -v v="v0.${K8S#1.}" '$2=="=>" && $3 ~ /^\.\/staging\// {print "\t" $1 " => " $1 " " v}' "$modfile"
  printf ')\n'
} > go.mod
# The kubelet needs modules the servers do not (e.g. github.com/armon/circbuf): go get records them.
pkgs=()
for c in kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler kube-proxy; do
  pkgs+=("k8s.io/kubernetes/cmd/$c@v$K8S")
done
go get -tool "${pkgs[@]}" "go.etcd.io/etcd/server/v3@$ETCD"
go mod tidy
