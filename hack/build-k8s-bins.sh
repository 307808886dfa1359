#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kubectl, and the edge node's kubelet,
# kube-scheduler and kube-proxy (test/testenv's Options.Node), from the tools module hack/e2e/k8stools into
# $E2E_BIN (a cache folder keyed by version, outside the work tree). A binary that is already there is kept:
# the folder name changes with the pin, so a version bump builds afresh.
# The first build takes about 8 minutes on 2 cores for the control plane and a few more for the node;
# progress is printed so nobody thinks it hung.
set -euo pipefail
: "${E2E_BIN:?E2E_BIN must name the cache folder}"
K8S_VERSION=${K8S_VERSION:-1.35.4}
here=$(cd "$(dirname "$0")" && pwd)
tools=$here/e2e/k8stools
mkdir -p "$E2E_BIN"
vpkg=k8s.io/component-base/version
major=${K8S_VERSION%%.*}; rest=${K8S_VERSION#*.}; minor=${rest%%.*}
k8s_ldflags="-s -w -X $vpkg.gitVersion=v$K8S_VERSION -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"

# shellcheck source=lib-build.sh
. "$here/lib-build.sh"
build() { build_bin e2e-bins "$tools" "$E2E_BIN" "$@"; } # name package ldflags

build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build etcd go.etcd.io/etcd/server/v3 "-s -w"
build kubectl k8s.io/kubernetes/cmd/kubectl "$k8s_ldflags"
build kubelet k8s.io/kubernetes/cmd/kubelet "$k8s_ldflags"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags"
build kube-proxy k8s.io/kubernetes/cmd/kube-proxy "$k8s_ldflags"
