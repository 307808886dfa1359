#!/usr/bin/env bash
# The demo of `make demo`: on the local control plane (`make testenv`: two apiservers and an edge
# node), create a workload upstream, bootstrap the syncer with `kubectl kubestellar syncer-gen`, apply
# its manifest at the edge (the syncer Pod runs from the image `make image` built), add a
# SyncerConfig, and watch the workload arrive downstream and its Pods run, their ready replicas come
# back upstream, an update, a drift and a deletion follow, and an object created at the edge is
# upsynced and its deletion followed (with the UpsyncDeleted Event upstream); then the syncer Pod's
# /readyz and /metrics (HTTPS, with a scraper's token), its conditions and its log (kubectl logs). The syncer Pod keeps running
# afterwards. Headings are bold on a terminal only: piped or redirected, the output has no escape
# codes.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBECTL=${KUBECTL:-$E2E_BIN/kubectl}
# DEMO_UPSTREAM=kcp runs the walk-through against the kcp mailbox workspace of `make testenv
# TESTENV_FLAGS=-kcp` (Deployments come there from an APIBinding); kube (default) against the plain
# kube-apiserver. Each side gets a kubectl discovery cache of its own: kubectl keys it by host, and kcp
# serves every workspace on one host.
case ${DEMO_UPSTREAM:-kube} in
  kube) upcfg=.testenv/upstream.kubeconfig ;;
  kcp) upcfg=.testenv/kcp-mailbox.kubeconfig ;;
  *) echo "demo: DEMO_UPSTREAM=$DEMO_UPSTREAM: want kube or kcp" >&2; exit 2 ;;
esac
[ -f "$upcfg" ] || { echo "demo: $upcfg is missing: start the control plane with make testenv (TESTENV_FLAGS=-kcp for kcp)" >&2; exit 1; }
U=(--kubeconfig "$upcfg" --cache-dir .testenv/kubectl-cache-up)
D=(--kubeconfig .testenv/downstream.kubeconfig --cache-dir .testenv/kubectl-cache-down)
up() { "$KUBECTL" "${U[@]}" "$@"; }
down() { "$KUBECTL" "${D[@]}" "$@"; }
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
waitfor() { # description, command...
  local what=$1; shift
  for _ in $(seq 1 300); do if "$@" >/dev/null 2>&1; then return 0; fi; sleep 0.1; done
  echo "demo: timed out waiting for $what" >&2; return 1
}

say "Upstream ($upcfg): a namespace with a ConfigMap and a Deployment"
up create namespace demo --dry-run=client -o yaml | up apply -f -
up -n demo create configmap greeting --from-literal=message=hello --dry-run=client -o yaml | up apply -f -
# The workload's image is the bed's test image (static busybox): nothing is pulled from outside.
up -n demo create deployment web --image=kubestellar-syncer-testapp:dev --replicas=2 --port=8080 --dry-run=client -o yaml \
  -- httpd -f -p 8080 -h /www | up apply -f -

say "Bootstrap: kubectl kubestellar syncer-gen against the mailbox (creates the syncer's identity, installs the SyncerConfig CRD unless it is served)"
IMAGE=${IMAGE:-kubestellar-syncer:dev}
PATH="$PWD/bin:$PATH" "$KUBECTL" kubestellar syncer-gen demo --syncer-image "$IMAGE" \
  -o .testenv/demo-syncer.yaml --helm-values .testenv/demo-values.yaml --kubeconfig "$upcfg" --requests-cpu 50m
id=$(sed -n 's/^# KubeStellar syncer "\(.*\)" for sync target.*/\1/p' .testenv/demo-syncer.yaml)
echo "The same syncer as values of the Helm chart charts/kubestellar-syncer (.testenv/demo-values.yaml), in part:"
awk '/^[^ #]/ { show = ($1 == "syncTarget:" || $1 == "image:" || $1 == "resources:") } show' .testenv/demo-values.yaml

say "Upstream: the SyncerConfig (manifests/examples/syncerconfig-demo.yaml)"
cat manifests/examples/syncerconfig-demo.yaml
up apply -f manifests/examples/syncerconfig-demo.yaml

say "Edge: apply the generated manifest (server-side: every object validated by the edge apiserver)"
down apply --server-side -f .testenv/demo-syncer.yaml
say "Edge: the syncer Pod runs from the image $IMAGE (in-cluster config, the mounted kubeconfig Secret, probes)"
down -n "$id" rollout status deployment "$id" --timeout=120s
down -n "$id" get pods -o wide
pod=$(down -n "$id" get pods -l app="$id" -o jsonpath='{.items[0].metadata.name}')
podip=$(down -n "$id" get pod "$pod" -o jsonpath='{.status.podIP}')

say "Downstream (edge cluster): the workload arrives"
waitfor "the Deployment downstream" down -n demo get deployment web
down -n demo get configmap/greeting deployment/web -L edge.kubestellar.io/downsynced-by
down -n demo get configmap greeting -o jsonpath='{.data.message}{"  annotations: "}{.metadata.annotations}{"\n"}'
say "Downstream: the Deployment's Pods run on the edge's node"
down -n demo rollout status deployment web --timeout=120s
down -n demo get pods -o wide
say "Upstream: the status comes back (status return; no controller runs upstream)"
waitfor "the ready replicas upstream" bash -c "[ \"\$('$KUBECTL' ${U[*]} -n demo get deployment web -o jsonpath='{.status.readyReplicas}')\" = 2 ]"
up -n demo get deployment web -o jsonpath='{"upstream status: replicas="}{.status.replicas}{" readyReplicas="}{.status.readyReplicas}{" availableReplicas="}{.status.availableReplicas}{"\n"}'

say "Update upstream: message=bonjour, replicas=3"
up -n demo patch configmap greeting -p '{"data":{"message":"bonjour"}}'
up -n demo scale deployment web --replicas=3
waitfor "the update downstream" bash -c "[ \"\$('$KUBECTL' ${D[*]} -n demo get configmap greeting -o jsonpath='{.data.message}')\" = bonjour ]"
waitfor "the scale downstream" bash -c "[ \"\$('$KUBECTL' ${D[*]} -n demo get deployment web -o jsonpath='{.spec.replicas}')\" = 3 ]"
down -n demo get configmap greeting -o jsonpath='{"message downstream: "}{.data.message}{"\n"}'
down -n demo get deployment web -o jsonpath='{"replicas downstream: "}{.spec.replicas}{"\n"}'
waitfor "three ready replicas upstream" bash -c "[ \"\$('$KUBECTL' ${U[*]} -n demo get deployment web -o jsonpath='{.status.readyReplicas}')\" = 3 ]"
up -n demo get deployment web -o jsonpath='{"upstream status: readyReplicas="}{.status.readyReplicas}{"\n"}'
say "Upstream: kubectl rollout status works there (the status's generations are the upstream's)"
up -n demo get deployment web -o jsonpath='{"upstream generation "}{.metadata.generation}{", observedGeneration "}{.status.observedGeneration}{"\n"}'
down -n demo get deployment web -o jsonpath='{"edge generation "}{.metadata.generation}{", observedGeneration "}{.status.observedGeneration}{"\n"}'
up -n demo rollout status deployment web --timeout=60s

say "Drift: edit the ConfigMap at the edge; the syncer puts it back"
down -n demo patch configmap greeting -p '{"data":{"message":"edited at the edge"}}'
waitfor "the repair" bash -c "[ \"\$('$KUBECTL' ${D[*]} -n demo get configmap greeting -o jsonpath='{.data.message}')\" = bonjour ]"
down -n demo get configmap greeting -o jsonpath='{"message downstream: "}{.data.message}{"\n"}'

say "Delete upstream: the ConfigMap goes downstream too"
up -n demo delete configmap greeting
waitfor "the deletion downstream" bash -c "! '$KUBECTL' ${D[*]} -n demo get configmap greeting"
down -n demo get configmap
say "Upsync: an edge component writes ConfigMap edge-report at the edge; it appears upstream, marked"
down -n demo create configmap edge-report --from-literal=result=pass
waitfor "the upsynced copy" up -n demo get configmap edge-report
up -n demo get configmap edge-report -o jsonpath='{"upstream: result="}{.data.result}{"  upsynced: "}{.metadata.annotations.edge\.kubestellar\.io/upsynced}{"\n"}'
down -n demo create configmap edge-report --from-literal=result=fail --dry-run=client -o yaml | down apply -f - 2>/dev/null
waitfor "the upsynced update" bash -c "[ \"\$('$KUBECTL' ${U[*]} -n demo get configmap edge-report -o jsonpath='{.data.result}')\" = fail ]"
up -n demo get configmap edge-report -o jsonpath='{"upstream after the edge update: result="}{.data.result}{"\n"}'
down -n demo delete configmap edge-report
waitfor "the upsynced deletion" bash -c "! '$KUBECTL' ${U[*]} -n demo get configmap edge-report"
echo "deleted at the edge: gone upstream"
say "Upstream: the Event the syncer recorded on the deleted copy"
waitfor "the UpsyncDeleted Event" bash -c "'$KUBECTL' ${U[*]} -n demo get events --field-selector reason=UpsyncDeleted -o name | grep -q ."
up -n demo get events --field-selector reason=UpsyncDeleted -o custom-columns='TYPE:.type,REASON:.reason,OBJECT:.involvedObject.kind,NAME:.involvedObject.name,MESSAGE:.message'

say "Upstream: the syncer's heartbeat and conditions on the SyncerConfig"
up get escfg
up get escfg demo -o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}): {.message}{"\n"}{end}'

say "The syncer Pod's health and metrics (its pod IP $podip; the host routes the pod network)"
# The metrics port serves tokens allowed to get /metrics at the edge (--metrics-secure): a scraper's
# ServiceAccount, bound to the ClusterRole syncer-gen made for it.
down -n "$id" create serviceaccount scraper --dry-run=client -o yaml | down apply -f - >/dev/null
down create clusterrolebinding "$id-scraper" --clusterrole="$id-metrics-reader" --serviceaccount="$id:scraper" --dry-run=client -o yaml | down apply -f - >/dev/null
token=$(down -n "$id" create token scraper)
if command -v curl >/dev/null; then
  code=$(curl -sS -o .testenv/demo-readyz.txt -w '%{http_code}' "http://$podip:8081/readyz")
  echo "GET http://$podip:8081/readyz: HTTP $code, $(cat .testenv/demo-readyz.txt)"
  echo "GET https://$podip:8443/metrics without a token: HTTP $(curl -sSk -o /dev/null -w '%{http_code}' "https://$podip:8443/metrics")"
  echo "GET https://$podip:8443/metrics with the scraper's token, some kubestellar_syncer_ series:"
  curl -sSk -H "Authorization: Bearer $token" "https://$podip:8443/metrics" | grep -E '^kubestellar_syncer_(leader|reachable|informers_synced|writes_total)' | sed -n '1,12p'
else
  echo "(no curl: see http://$podip:8081/readyz and https://$podip:8443/metrics with a bearer token of ServiceAccount $id/scraper)"
fi

say "The syncer's log, changes only (kubectl logs; -v=2 in the manifest):"
down -n "$id" logs "$pod" | grep -E '"(Created|Updated|Deleted) downstream object"|"Returned status upstream"|"Upsynced"|"Deleted upsynced copy upstream"' | sed -E 's/^[^]]*\] //' | sed -n '1,30p'
say "Done. The control plane and the syncer Pod keep running: try kubectl ${U[*]} ... / ${D[*]} ...; stop it all with make testenv-down"
