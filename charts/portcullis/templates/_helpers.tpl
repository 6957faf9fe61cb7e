{{/* The chart's name, nameOverride when set. */}}
{{- define "portcullis.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name of the release's objects: fullnameOverride, else <release>-<name>, or <release> when it already says <name>. */}}
{{- define "portcullis.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "portcullis.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "portcullis.labels" -}}
app.kubernetes.io/name: {{ include "portcullis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "portcullis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "portcullis.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "portcullis.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "portcullis.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* image: repository@digest when a digest is set (it wins over any tag); else repository:tag, the tag falling back to images.tag, then appVersion. */}}
{{- define "portcullis.image" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- $tag := .image.tag | default .root.Values.images.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The default Redis URL handed to the operator (empty: sidecars keep buckets in memory). */}}
{{- define "portcullis.redisUrl" -}}
{{- if .Values.redis.url -}}
{{- .Values.redis.url -}}
{{- else if .Values.redis.enabled -}}
{{- printf "redis://%s-redis.%s.svc:6379" (include "portcullis.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Redis of the auth servers: auth.redis.url, else redis.url, else the bundled auth-redis. */}}
{{- define "portcullis.authRedisUrl" -}}
{{- if .Values.auth.redis.url -}}
{{- .Values.auth.redis.url -}}
{{- else if .Values.redis.url -}}
{{- .Values.redis.url -}}
{{- else if .Values.redis.enabled -}}
{{- printf "redis://%s-auth-redis.%s.svc:6379" (include "portcullis.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/*
maxmemory of each bundled Redis, in bytes: three quarters of its memory limit, so that Redis
evicts or refuses writes before the kubelet kills it; the rest covers Redis's own overhead
(client buffers, fragmentation). The limit may be given in Ki, Mi, Gi or plain bytes.
*/}}
{{- define "portcullis.redisMaxmemory" -}}
{{- $limit := toString (required "redis.resources.limits.memory is required: Redis's maxmemory is derived from it" .Values.redis.resources.limits.memory) -}}
{{- $bytes := 0 -}}
{{- range $suffix, $factor := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 -}}
{{- if hasSuffix $suffix $limit -}}{{- $bytes = mul (trimSuffix $suffix $limit | int64) $factor -}}{{- end -}}
{{- end -}}
{{- if and (eq (int64 $bytes) 0) (regexMatch "^[0-9]+$" $limit) -}}{{- $bytes = int64 $limit -}}{{- end -}}
{{- if le (int64 $bytes) 0 -}}{{- fail (printf "redis.resources.limits.memory %q: give it in Ki, Mi, Gi or bytes" $limit) -}}{{- end -}}
{{- div (mul $bytes 3) 4 -}}
{{- end -}}
