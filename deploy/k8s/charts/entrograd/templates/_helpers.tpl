{{/*
Chart name, truncated to 63 characters (the DNS label limit).
*/}}
{{- define "entrograd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: "<release>-<chart>" unless the release name already contains the
chart name. Truncated so that the StatefulSet's pod names
("<fullname>-<ordinal>") and its controller-revision-hash label stay valid.
*/}}
{{- define "entrograd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"name-version" for the helm.sh/chart label.
*/}}
{{- define "entrograd.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "entrograd.labels" -}}
helm.sh/chart: {{ include "entrograd.chart" . }}
{{ include "entrograd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: entrograd
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels shared by every object of the release; each part adds
app.kubernetes.io/component.
*/}}
{{- define "entrograd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "entrograd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Selector labels of the aggregator pods.
*/}}
{{- define "entrograd.aggregator.selectorLabels" -}}
{{ include "entrograd.selectorLabels" . }}
app.kubernetes.io/component: aggregator
{{- end }}

{{/*
Selector labels of the example training Job's pods.
*/}}
{{- define "entrograd.worker.selectorLabels" -}}
{{ include "entrograd.selectorLabels" . }}
app.kubernetes.io/component: worker
{{- end }}

{{/*
Name of the headless Service that gives each shard its DNS name.
*/}}
{{- define "entrograd.headlessServiceName" -}}
{{- printf "%s-headless" (include "entrograd.fullname" .) }}
{{- end }}

{{/*
Name of the metrics Service.
*/}}
{{- define "entrograd.metricsServiceName" -}}
{{- printf "%s-metrics" (include "entrograd.fullname" .) }}
{{- end }}

{{/*
ServiceAccount of the aggregator and worker pods.
*/}}
{{- define "entrograd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "entrograd.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"repository@digest" or "repository:tag" (tag default: appVersion).
Call with (dict "image" .Values.x.image "context" $).
*/}}
{{- define "entrograd.image" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .context.Chart.AppVersion .image.tag) }}
{{- end }}
{{- end }}

{{/*
The ordered shard list every worker shares: the StatefulSet pods' stable DNS
names with the gRPC port, "<sts>-0.<headless>.<ns>.svc.<domain>:<port>,...".
Its order is the pods' ordinal order, so every worker computes the same
consistent-hash shard map (client_lib/wire/include/entrograd/shard_map.h).
*/}}
{{- define "entrograd.shardAddresses" -}}
{{- $fullname := include "entrograd.fullname" . }}
{{- $headless := include "entrograd.headlessServiceName" . }}
{{- $addresses := list }}
{{- range $i := until (int .Values.aggregator.replicas) }}
{{- $addresses = append $addresses (printf "%s-%d.%s.%s.svc.%s:%d" $fullname $i $headless $.Release.Namespace $.Values.clusterDomain (int $.Values.aggregator.grpcPort)) }}
{{- end }}
{{- join "," $addresses }}
{{- end }}

{{/*
Name of the Secret with the bearer tokens.
*/}}
{{- define "entrograd.authSecretName" -}}
{{- default (printf "%s-auth" (include "entrograd.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{/*
Where the TLS secret and the token file are mounted, in the aggregator and
in the example training Job's workers alike.
*/}}
{{- define "entrograd.tlsDir" -}}/etc/entrograd/tls{{- end }}
{{- define "entrograd.authDir" -}}/etc/entrograd/auth{{- end }}

{{/*
The health check of one aggregator container, for the startup, liveness and
readiness probes: the kubelet's native gRPC probe. With TLS it asks the
plaintext health-only port (--health_listen), since the kubelet cannot speak
TLS to a gRPC probe.
*/}}
{{- define "entrograd.aggregator.healthCheck" -}}
grpc:
  port: {{ ternary .Values.aggregator.healthPort .Values.aggregator.grpcPort .Values.tls.enabled }}
  service: entrograd.v1.Aggregator
{{- end }}

{{/*
Rejects value combinations the schema cannot express. Included by every
template that depends on them, so `helm template` fails with the reason.
*/}}
{{- define "entrograd.validateValues" -}}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName: a kubernetes.io/tls Secret with tls.crt and tls.key (and ca.crt for tls.clientAuth)" }}
{{- end }}
{{- if and .Values.tls.enabled (or (eq (int .Values.aggregator.healthPort) (int .Values.aggregator.grpcPort)) (eq (int .Values.aggregator.healthPort) (int .Values.aggregator.metricsPort))) }}
{{- fail "aggregator.healthPort must differ from aggregator.grpcPort and aggregator.metricsPort" }}
{{- end }}
{{- if and .Values.tls.clientAuth (not .Values.tls.enabled) }}
{{- fail "tls.clientAuth needs tls.enabled" }}
{{- end }}
{{- if and .Values.auth.enabled (not .Values.auth.existingSecret) (not .Values.auth.tokens) }}
{{- fail "auth.enabled needs auth.existingSecret or auth.tokens (job id -> token)" }}
{{- end }}
{{- if and .Values.auth.enabled .Values.trainingJob.enabled (not .Values.auth.existingSecret) (not (hasKey .Values.auth.tokens .Values.trainingJob.jobId)) }}
{{- fail (printf "auth.tokens has no token for the example Job's trainingJob.jobId %q" .Values.trainingJob.jobId) }}
{{- end }}
{{- if gt (int64 .Values.trainingJob.workers) (int64 .Values.aggregator.maxWorldSize) }}
{{- fail "trainingJob.workers exceeds aggregator.maxWorldSize: the shards would refuse the Join" }}
{{- end }}
{{- end }}
