#!/usr/bin/env bash
# Regenerates hack/e2e/k8stools/go.mod and go.sum: a tools module, outside the project's main module,
# that builds kube-apiserver, kube-controller-manager and etcd from the Go module proxy.
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
go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S" "k8s.io/kubernetes/cmd/kube-controller-manager@v$K8S" "k8s.io/kubernetes/cmd/kubectl@v$K8S" "go.etcd.io/etcd/server/v3@$ETCD"
go mod tidy
