{{/* The chart's name. */}}
{{- define "toolgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name, prefixed with the chart name unless it holds it. */}}
{{- define "toolgate.fullname" -}}
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

{{/* Labels of every object. */}}
{{- define "toolgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: toolgate
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels of the operator's own objects (Deployment, Pods, Service, ServiceAccount). */}}
{{- define "toolgate.managerLabels" -}}
{{ include "toolgate.labels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Labels that select the operator's Pods. */}}
{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "toolgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "toolgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "toolgate.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "toolgate.runnerImage" -}}
{{- default (include "toolgate.image" .) .Values.runnerImage }}
{{- end }}

{{/*
toolgate.fileObjects: the objects of a YAML file under files/ (copied from config/ by
`make chart-sync`), each re-emitted with the chart's labels added. Takes (list $ "path").
*/}}
{{- define "toolgate.fileObjects" -}}
{{- $root := index . 0 }}
{{- $content := $root.Files.Get (index . 1) }}
{{- if not $content }}{{ fail (printf "%s is missing from the chart: run make chart-sync" (index . 1)) }}{{ end }}
{{- range $doc := regexSplit "(?m)^---\\s*$" $content -1 }}
{{- $obj := fromYaml $doc }}
{{- if $obj.kind }}
{{- $labels := merge (include "toolgate.labels" $root | fromYaml) (default (dict) $obj.metadata.labels) }}
{{- $_ := set $obj.metadata "labels" $labels }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}

{{/* The egress-only policy's except list: networkPolicy.egress.except + .clusterCIDRs. */}}
{{- define "toolgate.egressExcept" -}}
{{- concat .Values.networkPolicy.egress.except .Values.networkPolicy.egress.clusterCIDRs | join "," }}
{{- end }}

{{/*
toolgate.podAntiAffinity: spread the operator's replicas over nodes. soft: preferred (a
single-node cluster still schedules them all); hard: required (one replica per node).
*/}}
{{- define "toolgate.podAntiAffinity" -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "toolgate.selectorLabels" . | fromYaml)) }}
{{- if eq .Values.podAntiAffinity "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      {{- toYaml $term | nindent 6 }}
{{- else if eq .Values.podAntiAffinity "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
  - {{- toYaml $term | nindent 4 }}
{{- else }}
{{- fail (printf "podAntiAffinity %q: want soft, hard or \"\"" .Values.podAntiAffinity) }}
{{- end }}
{{- end }}

{{/*
toolgate.apfLimited: the `limited` block of a PriorityLevelConfiguration from a level's
values (nominalConcurrencyShares, lendablePercent, optional borrowingLimitPercent, queuing).
*/}}
{{- define "toolgate.apfLimited" -}}
nominalConcurrencyShares: {{ .nominalConcurrencyShares }}
lendablePercent: {{ .lendablePercent }}
{{- if hasKey . "borrowingLimitPercent" }}
borrowingLimitPercent: {{ .borrowingLimitPercent }}
{{- end }}
limitResponse:
  type: Queue
  queuing:
    queues: {{ .queuing.queues }}
    handSize: {{ .queuing.handSize }}
    queueLengthLimit: {{ .queuing.queueLengthLimit }}
{{- end }}

{{/* Labels that select the egress proxy's Pods (the manager's --egress-proxy-pod-labels). */}}
{{- define "toolgate.egressProxySelectorLabels" -}}
app.kubernetes.io/name: {{ include "toolgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: egress-proxy
{{- end }}

{{/* The egress proxy as tool bodies reach it, and its records listener as the operator does:
egressProxy.url / recordsURL, else the Service's fixed ClusterIP, else its .svc name. */}}
{{- define "toolgate.egressProxyHost" -}}
{{- default (printf "%s-egress-proxy.%s.svc" (include "toolgate.fullname" .) .Release.Namespace) .Values.egressProxy.service.clusterIP }}
{{- end }}
{{- define "toolgate.egressProxyURL" -}}
{{- default (printf "http://%s:%d" (include "toolgate.egressProxyHost" .) (int .Values.egressProxy.port)) .Values.egressProxy.url }}
{{- end }}
{{- define "toolgate.egressProxyRecordsURL" -}}
{{- default (printf "http://%s:%d" (include "toolgate.egressProxyHost" .) (int .Values.egressProxy.recordsPort)) .Values.egressProxy.recordsURL }}
{{- end }}
{{- define "toolgate.egressProxyKeySecret" -}}
{{- default (printf "%s-egress-proxy-key" (include "toolgate.fullname" .)) .Values.egressProxy.keySecret.name }}
{{- end }}
{{/* The toolgate egress CA's Secret (tls.crt, tls.key, ca.crt): egressProxy.ca.existingSecret,
else the one the chart generates. */}}
{{- define "toolgate.egressCASecret" -}}
{{- default (printf "%s-egress-ca" (include "toolgate.fullname" .)) .Values.egressProxy.ca.existingSecret }}
{{- end }}
