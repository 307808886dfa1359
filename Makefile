# KubeStellar syncer. `make demo` shows it working; `make test` is what CI runs; `make help` lists the
# targets (each target's `## ` comment is its description there).
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := build

K8S_VERSION ?= 1.35.4
CACHE_DIR   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubestellar-syncer
# Control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kubectl), built from the Go
# module proxy by hack/build-k8s-bins.sh into a folder keyed by version, outside the work tree.
E2E_BIN     ?= $(CACHE_DIR)/e2e-bin/k8s-v$(K8S_VERSION)
# The Prometheus server and promtool, built from the Go module proxy (hack/build-prometheus.sh), for the scrape
# and alerting e2e tests (and the rule checks in the unit tests, which skip without promtool).
PROMETHEUS_VERSION ?= v3.16.0
PROMETHEUS_BIN ?= $(CACHE_DIR)/prometheus-$(PROMETHEUS_VERSION)/prometheus
PROMTOOL_BIN   ?= $(CACHE_DIR)/prometheus-$(PROMETHEUS_VERSION)/promtool
export E2E_BIN K8S_VERSION PROMETHEUS_BIN PROMTOOL_BIN PROMETHEUS_VERSION
# The edge node of the test bed (test/testenv, Options.Node): containerd, runc, the CNI plugins and
# busybox from Debian's packages (hack/fetch-node-pkgs.sh; iptables and conntrack installed), and the
# pause and testapp images built here (hack/build-node-images.sh); kubelet, kube-scheduler and kube-proxy
# come with the control-plane binaries (E2E_BIN).
NODE_DIR    ?= $(CACHE_DIR)/node
export NODE_DIR
# kcp and crd-puller, built from the Go module proxy by hack/build-kcp.sh (tools module hack/e2e/kcptools).
KCP_VERSION ?= v0.31.2
KCP_BIN     ?= $(CACHE_DIR)/e2e-bin/kcp-$(KCP_VERSION)
export KCP_BIN KCP_VERSION

GO          ?= go
E2E_TIMEOUT ?= 45m
# The upstreams every e2e scenario runs against: a plain kube-apiserver and a kcp mailbox workspace.
E2E_UPSTREAMS ?= kube kcp

IMAGE       ?= kubestellar-syncer:dev

.PHONY: help bench bench-pod-memory bench-quick build test test-unit test-e2e e2e-bins kcp-bins node-bins prometheus-bin image image-check release release-check testenv testenv-down lint demo clean

help: ## List the targets and what they do.
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_.-]+:.*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## Build the binaries into bin/, stamped with `git describe` and the commit (--version; VERSION=... to override).
	$(GO) build -ldflags "$$(bash hack/version-ldflags.sh)" -o bin/ ./cmd/...
	@# kubectl (v1.26+) completes `kubectl kubestellar syncer-gen` by running this link (see docs/install.md).
	@ln -sf kubectl-kubestellar-syncer_gen bin/kubectl_complete-kubestellar-syncer_gen
	@# `kubectl kubestellar sign` runs kubectl-kubestellar-sign: the same binary, answering to that name.
	@ln -sf kubectl-kubestellar-syncer_gen bin/kubectl-kubestellar-sign

test: lint test-unit image-check release-check test-e2e ## Everything CI runs.

test-unit: prometheus-bin helm-bin e2e-bins ## Unit tests (fake clients, pure packages), with the race detector (promtool checks the alerting rules, helm the chart, the real kubectl the plugin's completion).
	$(GO) test -race -count=1 ./pkg/... ./cmd/... ./manifests/... ./charts/... ./test/bench/... ./test/support/...

test-e2e: e2e-bins kcp-bins node-bins image prometheus-bin helm-bin ## End-to-end tests against real control planes and a real edge node (once per upstream in E2E_UPSTREAMS): the syncer as a Pod from its image where a test is about deployment, as a process (race detector) elsewhere.
	@log=$$(mktemp -t kubestellar-syncer-e2e-XXXXXX.log); echo "full log: $$log"; rc=0; \
	for up in $(E2E_UPSTREAMS); do \
	  echo "e2e: upstream $$up"; \
	  E2E=1 E2E_UPSTREAM=$$up $(GO) test -race -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/... 2>&1 | tee -a "$$log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic|e2e: |\s+[a-z_]+_test\.go:[0-9]+:)' ; \
	  r=$${PIPESTATUS[0]}; echo "e2e: upstream $$up: exit status $$r"; [ $$r -eq 0 ] || rc=$$r; \
	done; echo "e2e: full log in $$log"; exit $$rc

e2e-bins: ## Build the control-plane and node binaries once (about 10 minutes cold; seconds when cached).
	@bash hack/build-k8s-bins.sh

node-bins: e2e-bins ## The edge node's Debian packages (containerd, runc, CNI plugins, busybox; iptables and conntrack installed) and its images, built here (cached).
	@bash hack/fetch-node-pkgs.sh
	@bash hack/build-node-images.sh

kcp-bins: ## Build kcp and crd-puller once (about 8 minutes cold; seconds when cached).
	@bash hack/build-kcp.sh

image: ## Build the OCI image without a container engine into _output/image/ (layout, docker load tarballs): IMAGE=<registry>/kubestellar-syncer:<tag>, IMAGE_PUSH=1 pushes it.
	@IMAGE=$(IMAGE) IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" IMAGE_OUT=$(IMAGE_OUT) bash hack/build-image.sh

release: helm-bin ## VERSION=vX.Y.Z: the syncer and plugin binaries, the image as an OCI layout, the chart package, the krew manifest and SHA256SUMS, in _output/release/<version>/.
	@VERSION=$(VERSION) bash hack/release.sh

release-check: helm-bin ## Make a release (v0.0.0-check) and check every file of it (test/release): checksums, versions, archives, chart, krew manifest, image layout.
	@VERSION=v0.0.0-check RELEASE_OUT=_output/release-check RELEASE_ALLOW_DIRTY=1 bash hack/release.sh
	RELEASE_DIR=$(abspath _output/release-check) RELEASE_VERSION=v0.0.0-check $(GO) test -count=1 -v ./test/release/

image-check: image runc-bin ## Check the image's static binary, then inspect the built image (config, every layer's files, static /syncer run as 65532) and run it in runc.
	@bash hack/image-check.sh
	cd hack/image && IMAGE_OUT=$(abspath $(IMAGE_OUT)) IMAGE_EXPECT_PLATFORMS="$(IMAGE_PLATFORMS)" IMAGE_RUNTIME=$(RUNC_BIN) \
	  IMAGE_EXPECT_REVISION=$${REVISION:-$$(git rev-parse HEAD 2>/dev/null)} $(GO) test -count=1 -v .

prometheus-bin: ## Build the Prometheus server and promtool from the Go module proxy (cached by version; about 4 minutes cold).
	@bash hack/build-prometheus.sh

testenv: e2e-bins kcp-bins node-bins ## Start etcd, two kube-apiservers, a kube-controller-manager and the edge's node (root); kubeconfigs in .testenv/. TESTENV_FLAGS=-kcp adds kcp, -node=false drops the node.
	@$(GO) run ./test/testenv/cmd -dir .testenv -node-image $(IMAGE_OUT)/syncer-image.docker.tar $(TESTENV_FLAGS) up

testenv-down: ## Stop exactly what `make testenv` started, remove what its node made (pods, mounts, network namespace, cgroups) and .testenv/.
	@$(GO) run ./test/testenv/cmd -dir .testenv down

# golangci-lint, built from the Go module proxy once per version and Go toolchain (it must be at
# least the go.mod's) into the cache, outside the work tree: 1.5 minutes cold on 2 idle cores (about
# 2 CPU-minutes, downloads included), then nothing.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(CACHE_DIR)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)-$(shell $(GO) env GOVERSION)

lint: $(GOLANGCI_LINT) ## go vet, gofmt and golangci-lint (linters in .golangci.yml), on the module and on hack/image's.
	$(GO) vet ./...
	cd hack/image && $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GOLANGCI_LINT) run ./...
	cd hack/image && $(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	@echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $@ (once)"
	@mkdir -p $(@D) && tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  GOBIN=$$tmp $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && \
	  mv "$$tmp/golangci-lint" $@

# DEMO_UPSTREAM=kcp runs the demo against a kcp mailbox workspace (and starts kcp with the testenv).
DEMO_UPSTREAM ?= kube
export DEMO_UPSTREAM
ifeq ($(DEMO_UPSTREAM),kcp)
TESTENV_FLAGS += -kcp
endif

demo: build image testenv ## Show the syncer at work on the local control plane, as a Pod on the edge node (DEMO_UPSTREAM=kcp: against a kcp workspace).
	@bash hack/demo.sh

bench: build e2e-bins kcp-bins ## Benchmarks on a real control plane and kcp (about 70 minutes): table on stdout, JSON in bench-results.json.
	$(GO) run ./test/bench -syncer bin/syncer -bin-dir $(E2E_BIN) -kcp-bin-dir $(KCP_BIN) -out bench-results.json $(BENCH_ARGS)

bench-pod-memory: build image e2e-bins node-bins ## The syncer as its users run it, a Pod of syncer-gen's manifest on the edge's node (root): working set against the derived memory limit at 1,000, 10,000 and 100,000 ConfigMaps; JSON in bench-pod-memory.json.
	$(GO) run ./test/bench -scenarios podmemory -syncer bin/syncer -plugin bin/kubectl-kubestellar-syncer_gen -bin-dir $(E2E_BIN) \
	  -syncer-image $(IMAGE) -syncer-image-archive $(IMAGE_OUT)/syncer-image.docker.tar -out bench-pod-memory.json $(BENCH_ARGS)

bench-quick: build e2e-bins kcp-bins ## A smoke run of the benchmarks (small sizes, one repetition; not figures).
	@out=$$(mktemp -t bench-quick-XXXXXX.json) && \
	$(GO) run ./test/bench -quick -syncer bin/syncer -bin-dir $(E2E_BIN) -kcp-bin-dir $(KCP_BIN) -out "$$out" $(BENCH_ARGS) && \
	echo "bench-quick: results in $$out"

clean: testenv-down ## Stop the local control plane and remove bin/.
	rm -rf bin/

# helm, built from the Go module proxy once per version into the cache, outside the work tree (as
# golangci-lint above), for the chart's tests (charts/, test/e2e/helm_test.go); it is a tool, never in
# the product's go.mod. The -X flags are those of helm's own release build: its version, and the
# Kubernetes version its `helm template` and `helm lint` assume by default (that of the k8s.io modules
# in helm's go.mod; without them it assumes 1.20). About 3 minutes cold on 2 idle cores (6 CPU-minutes,
# downloads included), then nothing.
HELM_VERSION ?= v3.22.0
HELM_BIN     ?= $(CACHE_DIR)/tools/helm-$(HELM_VERSION)
export HELM_BIN

.PHONY: helm-bin
helm-bin: $(HELM_BIN) ## Build helm once (for the chart's tests; about 3 minutes cold, nothing when cached).

$(HELM_BIN):
	@echo "building helm $(HELM_VERSION) into $@ (once)"
	@mkdir -p $(@D) && tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  gomod=$$($(GO) mod download -json helm.sh/helm/v3@$(HELM_VERSION) | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$$/\1/p') && \
	  k8s=$$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9][0-9]*\)\..*/\1/p' "$$gomod") && [ -n "$$k8s" ] && \
	  pkg=helm.sh/helm/v3 && \
	  GOBIN=$$tmp $(GO) install -ldflags "-X $$pkg/internal/version.version=$(HELM_VERSION) \
	    -X $$pkg/pkg/chartutil.k8sVersionMajor=1 -X $$pkg/pkg/chartutil.k8sVersionMinor=$$k8s \
	    -X $$pkg/pkg/lint/rules.k8sVersionMajor=1 -X $$pkg/pkg/lint/rules.k8sVersionMinor=$$k8s" \
	    $$pkg/cmd/helm@$(HELM_VERSION) && \
	  mv "$$tmp/helm" $@

# The image (make image): hack/build-image.sh builds the static syncer for each of IMAGE_PLATFORMS and
# hack/image (its own Go module: go-containerregistry) makes the OCI image from layers it writes, no
# base image pulled; make image-check runs it with runc from Debian's package (hack/fetch-runc.sh).
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_OUT       ?= _output/image
RUNC_BIN        ?= $(CACHE_DIR)/runc/runc

.PHONY: runc-bin

runc-bin: ## Fetch runc from Debian's package (cached) for image-check to run the image in a container.
	@RUNC_BIN=$(RUNC_BIN) bash hack/fetch-runc.sh
