{{/* Names, labels and small computed values shared by every template of the worldline chart. */}}

{{/* The chart name, or nameOverride. */}}
{{- define "worldline.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's base name: fullnameOverride, else the release name (with the chart name when it does not contain it). */}}
{{- define "worldline.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "worldline.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "worldline.labels" -}}
helm.sh/chart: {{ include "worldline.chart" . }}
app.kubernetes.io/name: {{ include "worldline.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: worldline
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "controller"). */}}
{{- define "worldline.selectorLabels" -}}
app.kubernetes.io/name: {{ include "worldline.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of one component's objects: (dict "ctx" $ "component" "controller"). */}}
{{- define "worldline.componentLabels" -}}
{{ include "worldline.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "worldline.controller.fullname" -}}
{{- printf "%s-controller" (include "worldline.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "worldline.nodeAgent.fullname" -}}
{{- printf "%s-node-agent" (include "worldline.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "worldline.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create -}}
{{- default (include "worldline.controller.fullname" .) .Values.controller.serviceAccount.name -}}
{{- else -}}
{{- required "controller.serviceAccount.name is required when controller.serviceAccount.create is false" .Values.controller.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "worldline.nodeAgent.serviceAccountName" -}}
{{- if .Values.nodeAgent.serviceAccount.create -}}
{{- default (include "worldline.nodeAgent.fullname" .) .Values.nodeAgent.serviceAccount.name -}}
{{- else -}}
{{- required "nodeAgent.serviceAccount.name is required when nodeAgent.serviceAccount.create is false" .Values.nodeAgent.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Kubernetes username of the node-agent's service account (what the admission policy matches). */}}
{{- define "worldline.nodeAgent.username" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "worldline.nodeAgent.serviceAccountName" .) -}}
{{- end -}}

{{/* repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "worldline.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Environment both processes share: the namespace they keep Leases (and the receipts key) in, and the log level. */}}
{{- define "worldline.commonEnv" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: WORLDLINE_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: WORLDLINE_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end -}}
