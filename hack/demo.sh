#!/usr/bin/env bash
# The demo of `make demo`: on the local control plane (`make testenv`), create a workload upstream,
# bootstrap the syncer with `kubectl kubestellar syncer-gen` and its manifest (and Helm values), add a
# SyncerConfig, run the syncer with the generated identities, and watch the workload arrive
# downstream, its status come back upstream, an update and a deletion follow it, and an object
# created at the edge is upsynced and its deletion followed (with the UpsyncDeleted Event upstream);
# then the syncer's /readyz and /metrics, its conditions and its log, and it is stopped. Headings are
# bold on a terminal only: piped or redirected, the output has no escape codes.
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
up -n demo create deployment web --image=registry.invalid/web:1 --replicas=2 --dry-run=client -o yaml | up apply -f -

say "Bootstrap: kubectl kubestellar syncer-gen against the mailbox (creates the syncer's identity, installs the SyncerConfig CRD unless it is served)"
PATH="$PWD/bin:$PATH" "$KUBECTL" kubestellar syncer-gen demo --syncer-image registry.invalid/kubestellar-syncer:demo \
  -o .testenv/demo-syncer.yaml --helm-values .testenv/demo-values.yaml --kubeconfig "$upcfg" --requests-cpu 50m
id=$(sed -n 's/^# KubeStellar syncer "\(.*\)" for sync target.*/\1/p' .testenv/demo-syncer.yaml)
echo "The same syncer as values of the Helm chart charts/kubestellar-syncer (.testenv/demo-values.yaml), in part:"
awk '/^[^ #]/ { show = ($1 == "syncTarget:" || $1 == "image:" || $1 == "resources:") } show' .testenv/demo-values.yaml

say "Upstream: the SyncerConfig (manifests/examples/syncerconfig-demo.yaml)"
cat manifests/examples/syncerconfig-demo.yaml
up apply -f manifests/examples/syncerconfig-demo.yaml

say "Edge: apply the generated manifest (server-side: every object validated by the edge apiserver)"
down apply --server-side -f .testenv/demo-syncer.yaml
down -n "$id" get deployment,serviceaccount,secret,role -o name

say "Run the syncer with the Deployment's arguments and the generated identities (log in .testenv/syncer.log)"
echo "(The edge's node cannot pull registry.invalid/kubestellar-syncer:demo: no image comes from outside the machine."
echo " The same binary runs locally instead, with the kubeconfig from the generated Secret upstream and a token of"
echo " the generated ServiceAccount at the edge.)"
down -n "$id" get secret "$id-kubeconfig" -o jsonpath='{.data.kubeconfig}' | base64 -d > .testenv/demo-upstream.kubeconfig
EK=.testenv/demo-edge.kubeconfig
rm -f "$EK"
"$KUBECTL" --kubeconfig "$EK" config set-cluster edge --server="$(down config view --minify -o jsonpath='{.clusters[0].cluster.server}')" \
  --certificate-authority="$(down config view --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')" >/dev/null
"$KUBECTL" --kubeconfig "$EK" config set-credentials syncer --token="$(down -n "$id" create token "$id")" >/dev/null
"$KUBECTL" --kubeconfig "$EK" config set-context edge --cluster=edge --user=syncer >/dev/null
"$KUBECTL" --kubeconfig "$EK" config use-context edge >/dev/null
mapfile -t args < <(down -n "$id" get deployment "$id" -o go-template='{{range (index .spec.template.spec.containers 0).args}}{{.}}{{"\n"}}{{end}}' |
  sed -e 's#^--from-kubeconfig=.*#--from-kubeconfig=.testenv/demo-upstream.kubeconfig#' \
      -e 's#^--metrics-bind-address=.*#--metrics-bind-address=127.0.0.1:0#' -e 's#^--health-probe-bind-address=.*#--health-probe-bind-address=127.0.0.1:0#')
printf '  %s\n' "${args[@]}"
bin/syncer "${args[@]}" --to-kubeconfig "$EK" --leader-elect-resource-namespace "$id" > .testenv/syncer.log 2>&1 &
syncer=$!
echo "syncer started (pid $syncer)"
stop_syncer() { # idempotent: at the end, and on any exit before it
  [ -n "${syncer:-}" ] || return 0
  say "Stopping the syncer (pid $syncer); the control plane keeps running"
  kill "$syncer" 2>/dev/null || true
  wait "$syncer" 2>/dev/null || true
  syncer=''
  echo "syncer stopped; its last log line:"
  tail -n 1 .testenv/syncer.log | sed -E 's/^[^]]*\] //'
}
trap stop_syncer EXIT
# served: the address the syncer logged for "Serving <what>" (its ports are chosen at start).
served() { sed -n -E "s/.*Serving $1.*address\"?[:=]\"([^\"]+)\".*/\1/p" .testenv/syncer.log | tail -n 1; }

say "Downstream (edge cluster): the workload arrives"
waitfor "the Deployment downstream" down -n demo get deployment web
down -n demo get configmap/greeting deployment/web -L edge.kubestellar.io/downsynced-by
down -n demo get configmap greeting -o jsonpath='{.data.message}{"  annotations: "}{.metadata.annotations}{"\n"}'
say "Downstream: the edge's controller manager runs the Deployment and writes its status"
waitfor "a ReplicaSet" bash -c "'$KUBECTL' ${D[*]} -n demo get rs -o name | grep -q ."
down -n demo get deployment web
say "Upstream: the status comes back (status return; no controller runs upstream)"
waitfor "the status upstream" bash -c "[ \"\$('$KUBECTL' ${U[*]} -n demo get deployment web -o jsonpath='{.status.replicas}')\" = 2 ]"
up -n demo get deployment web -o jsonpath='{"upstream status: replicas="}{.status.replicas}{" updatedReplicas="}{.status.updatedReplicas}{" observedGeneration="}{.status.observedGeneration}{"\n"}'

say "Update upstream: message=bonjour, replicas=3"
up -n demo patch configmap greeting -p '{"data":{"message":"bonjour"}}'
up -n demo scale deployment web --replicas=3
waitfor "the update downstream" bash -c "[ \"\$('$KUBECTL' ${D[*]} -n demo get configmap greeting -o jsonpath='{.data.message}')\" = bonjour ]"
waitfor "the scale downstream" bash -c "[ \"\$('$KUBECTL' ${D[*]} -n demo get deployment web -o jsonpath='{.spec.replicas}')\" = 3 ]"
down -n demo get configmap greeting -o jsonpath='{"message downstream: "}{.data.message}{"\n"}'
down -n demo get deployment web -o jsonpath='{"replicas downstream: "}{.spec.replicas}{"\n"}'

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

say "The syncer's health and metrics (addresses from its log)"
waitfor "the syncer's addresses in its log" bash -c "grep -q 'Serving health probes' .testenv/syncer.log && grep -q 'Serving metrics' .testenv/syncer.log"
health=$(served 'health probes') metrics=$(served metrics)
if command -v curl >/dev/null; then
  code=$(curl -sS -o .testenv/demo-readyz.txt -w '%{http_code}' "http://$health/readyz")
  echo "GET http://$health/readyz: HTTP $code, $(cat .testenv/demo-readyz.txt)"
  echo "GET http://$metrics/metrics, some kubestellar_syncer_ series:"
  curl -sS "http://$metrics/metrics" | grep -E '^kubestellar_syncer_(leader|reachable|informers_synced|writes_total)' | sed -n '1,12p'
else
  echo "(no curl: see http://$health/readyz and http://$metrics/metrics)"
fi

say "Syncer log, changes only (-v=2):"
grep -E '"(Created|Updated|Deleted) downstream object"|"Returned status upstream"|"Upsynced"|"Deleted upsynced copy upstream"' .testenv/syncer.log | sed -E 's/^[^]]*\] //' | sed -n '1,30p'
stop_syncer
say "Done. The control plane keeps running: try kubectl ${U[*]} ... / ${D[*]} ...; stop it with make testenv-down"
