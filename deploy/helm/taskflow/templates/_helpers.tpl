{{/* The chart's name, release-qualified names and labels. */}}

{{- define "taskflow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* RELEASE-taskflow, or the release name alone when it holds the chart's name already. */}}
{{- define "taskflow.fullname" -}}
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

{{- define "taskflow.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; .root is the top context, .component the role ("api", "service-report"). */}}
{{- define "taskflow.labels" -}}
helm.sh/chart: {{ include "taskflow.chart" .root }}
{{ include "taskflow.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: taskflow
{{- end -}}

{{/* The labels a role's selector, PodDisruptionBudget and Service match on. */}}
{{- define "taskflow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "taskflow.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "taskflow.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "taskflow.secretName" -}}
{{- default (include "taskflow.fullname" .) .Values.secret.existingSecret -}}
{{- end -}}

{{/* A Secret key's value as an environment variable; .optional when the process runs without it. */}}
{{- define "taskflow.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "taskflow.secretName" .root }}
      key: {{ .key }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/* The variable each entry of secret.keys sets. */}}
{{- define "taskflow.secretVars" -}}
redisUrl: REDIS_URL
databaseUrl: DATABASE_URL
adminKey: TASKFLOW_ADMIN_KEY
openrouterApiKey: OPENROUTER_API_KEY
{{- end -}}

{{/*
The environment of a role's container: the secrets it reads, the common
settings, what the chart derives (TASKFLOW_SHUTDOWN_GRACE, the API's
TASKFLOW_ADDR, TASKFLOW_ARTIFACT_DIR where the volume is mounted: the API
and the services), then the role's own (later entries win).
.root, .role (its values), .secrets (the entries of secret.keys it reads:
redisUrl and adminKey are required, the others optional, and left out when
the chart's own Secret has no value for them).
*/}}
{{- define "taskflow.env" -}}
{{- $root := .root -}}
{{- /* what the chart derives from its own values, an env entry must not override */}}
{{- range concat ($root.Values.env | default list) (.role.env | default list) }}
{{- if has .name (list "TASKFLOW_SHUTDOWN_GRACE" "TASKFLOW_ADDR" "TASKFLOW_ARTIFACT_DIR") }}
{{- fail (printf "env %s: set by the chart (shutdownGraceSeconds, the API's port 8080, artifacts.existingClaim), not in env" .name) }}
{{- end }}
{{- end }}
{{- $vars := include "taskflow.secretVars" . | fromYaml -}}
{{- range .secrets }}
{{- $var := index $vars . -}}
{{- $required := or (eq . "redisUrl") (eq . "adminKey") -}}
{{- if or $required $root.Values.secret.existingSecret (index $root.Values.secret.values $var) }}
{{ include "taskflow.secretEnv" (dict "root" $root "name" $var "key" (index $root.Values.secret.keys .) "optional" (not $required)) }}
{{- end }}
{{- end }}
{{- with $root.Values.env }}
{{ toYaml . }}
{{- end }}
- name: TASKFLOW_SHUTDOWN_GRACE
  value: {{ printf "%ds" (int (include "taskflow.grace" .)) | quote }}
{{- if .http }}
- name: TASKFLOW_ADDR
  value: ":8080"
{{- end }}
{{- if and $root.Values.artifacts.existingClaim (or .http .outputDir) }}
- name: TASKFLOW_ARTIFACT_DIR
  value: /data/artifacts
{{- end }}
{{- with .role.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A role's drain (TASKFLOW_SHUTDOWN_GRACE) in seconds. */}}
{{- define "taskflow.grace" -}}
{{- if hasKey .role "shutdownGraceSeconds" -}}{{ .role.shutdownGraceSeconds | int }}{{- else -}}{{ .root.Values.shutdownGraceSeconds | int }}{{- end -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: preStop sleep (1.30 on) + drain + margin. */}}
{{- define "taskflow.terminationGrace" -}}
{{- $margin := .root.Values.terminationMarginSeconds -}}
{{- if hasKey .role "terminationMarginSeconds" -}}{{- $margin = .role.terminationMarginSeconds -}}{{- end -}}
{{- $sleep := 0 -}}
{{- if semverCompare ">=1.30.0-0" .root.Capabilities.KubeVersion.Version -}}{{- $sleep = .role.preStopSleepSeconds | default 0 | int -}}{{- end -}}
{{- add $sleep (include "taskflow.grace" . | int) ($margin | int) -}}
{{- end -}}
