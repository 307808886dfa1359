{{/*
The chart name, or nameOverride: the app.kubernetes.io/name label.
*/}}
{{- define "kubestellar-syncer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: fullnameOverride, else the release name when it contains the
chart name, else <release>-<chart name>; at most 63 characters (a DNS label).
*/}}
{{- define "kubestellar-syncer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The helm.sh/chart label: chart name and version.
*/}}
{{- define "kubestellar-syncer.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The image tag: image.tag, else the chart's appVersion.
*/}}
{{- define "kubestellar-syncer.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end }}

{{/*
The app.kubernetes.io/version label: the image tag made a valid label value.
*/}}
{{- define "kubestellar-syncer.version" -}}
{{- regexReplaceAll "[^A-Za-z0-9._-]" (include "kubestellar-syncer.tag" .) "_" | trunc 63 | trimAll "-_." }}
{{- end }}

{{/*
The labels of every object (the recommended app.kubernetes.io labels).
*/}}
{{- define "kubestellar-syncer.labels" -}}
helm.sh/chart: {{ include "kubestellar-syncer.chart" . }}
{{ include "kubestellar-syncer.selectorLabels" . }}
app.kubernetes.io/version: {{ include "kubestellar-syncer.version" . | quote }}
app.kubernetes.io/component: syncer
app.kubernetes.io/part-of: kubestellar
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels that select the pods: they never change during the release's life (a Deployment's selector
is immutable).
*/}}
{{- define "kubestellar-syncer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubestellar-syncer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount's name.
*/}}
{{- define "kubestellar-syncer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kubestellar-syncer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false: the existing ServiceAccount the syncer runs as" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The ClusterRole's and ClusterRoleBinding's name: cluster-scoped, so the namespace is part of it (two
releases of one name in two namespaces do not collide).
*/}}
{{- define "kubestellar-syncer.clusterRoleName" -}}
{{- printf "%s:%s" .Release.Namespace (include "kubestellar-syncer.fullname" .) }}
{{- end }}

{{/*
The fence's ValidatingAdmissionPolicy and its binding: cluster-wide, named after the namespace too
(a policy's name takes no colon).
*/}}
{{- define "kubestellar-syncer.fenceName" -}}
{{- printf "%s.%s-fence" .Release.Namespace (include "kubestellar-syncer.fullname" .) }}
{{- end }}

{{/*
A CEL list literal of the strings given.
*/}}
{{- define "kubestellar-syncer.celStrings" -}}
{{- $quoted := list }}
{{- range . }}{{- $quoted = append $quoted (. | quote) }}{{- end }}
{{- join ", " $quoted }}
{{- end }}

{{/*
The Lease's namespace.
*/}}
{{- define "kubestellar-syncer.leaseNamespace" -}}
{{- .Values.leaderElection.namespace | default .Release.Namespace }}
{{- end }}

{{/*
The Secret that holds the upstream kubeconfig, and its key. Exactly one of upstream.existingSecret and
upstream.kubeconfig must be set.
*/}}
{{- define "kubestellar-syncer.kubeconfigSecret" -}}
{{- if and .Values.upstream.existingSecret .Values.upstream.kubeconfig }}
{{- fail "upstream.existingSecret and upstream.kubeconfig are both set: give the upstream kubeconfig one way only" }}
{{- end }}
{{- if .Values.upstream.existingSecret }}
{{- .Values.upstream.existingSecret }}
{{- else if .Values.upstream.kubeconfig }}
{{- printf "%s-kubeconfig" (include "kubestellar-syncer.fullname" .) }}
{{- else }}
{{- fail "the upstream kubeconfig is required: set upstream.existingSecret (a Secret in the release namespace holding it) or upstream.kubeconfig (e.g. --set-file upstream.kubeconfig=mailbox.kubeconfig)" }}
{{- end }}
{{- end }}

{{- define "kubestellar-syncer.kubeconfigKey" -}}
{{- if .Values.upstream.existingSecret }}
{{- required "upstream.existingSecretKey is required with upstream.existingSecret: the key of the kubeconfig in that Secret" .Values.upstream.existingSecretKey }}
{{- else }}
{{- "kubeconfig" }}
{{- end }}
{{- end }}

{{/*
Checks that span several values; included by the Deployment.
*/}}
{{- define "kubestellar-syncer.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail (printf "replicas is %d with leaderElection.enabled false: several syncers would write the same objects; enable leader election or set replicas to 1" (int .Values.replicas)) }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled (the ServiceMonitor scrapes the Service); or use metrics.podMonitor" }}
{{- end }}
{{- with .Values.podDisruptionBudget }}
{{- if and .enabled (not (kindIs "string" .minAvailable)) (not (kindIs "invalid" .minAvailable)) }}
{{- if and (gt (int .minAvailable) 0) (ge (int .minAvailable) (int $.Values.replicas)) }}
{{- fail (printf "podDisruptionBudget.minAvailable %d with replicas %d would block every voluntary eviction (node drains would wait forever): raise replicas or lower minAvailable" (int .minAvailable) (int $.Values.replicas)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The signature policy, checked: Off, Warn, Enforce or Strict; all but Off need keys.
*/}}
{{- define "kubestellar-syncer.signaturePolicy" -}}
{{- $p := .Values.signatures.policy | default "Off" | toString -}}
{{- if not (has $p (list "Off" "Warn" "Enforce" "Strict")) -}}
{{- fail (printf "signatures.policy %q: want Off, Warn, Enforce or Strict" $p) -}}
{{- end -}}
{{- if and (ne $p "Off") (not .Values.signatures.publicKeys) (not .Values.signatures.existingSecret) -}}
{{- fail (printf "signatures.policy %s needs signatures.publicKeys or signatures.existingSecret" $p) -}}
{{- end -}}
{{- $p -}}
{{- end }}
