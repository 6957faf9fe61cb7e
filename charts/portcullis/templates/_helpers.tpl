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

{{/*
Redis credentials come only from Secrets: a URL in values may not carry a password (it would be
copied into every route's ConfigMap and the auth servers' env). `what` names the value.
*/}}
{{- define "portcullis.plainRedisUrl" -}}
{{- if regexMatch "^rediss?://[^/]*@" .url -}}
{{- fail (printf "%s holds credentials (user:password@): put the URL in a Secret in the release namespace and name it in %s (name, key) instead" .what .secret) -}}
{{- end -}}
{{- .url -}}
{{- end -}}

{{/* "true" when the bundled limiter Redis runs: enabled, and no URL or Secret of another Redis given. */}}
{{- define "portcullis.redisBundled" -}}
{{- if and .Values.redis.enabled (not .Values.redis.url) (not .Values.redis.existingSecret.name) -}}true{{- end -}}
{{- end -}}

{{/* "true" when the bundled auth-redis runs too (auth.redis names no other). */}}
{{- define "portcullis.authRedisBundled" -}}
{{- if and (include "portcullis.redisBundled" .) (not .Values.auth.redis.url) (not .Values.auth.redis.existingSecret.name) -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the bundled Redis passwords and URLs, generated once (redis-credentials.yaml). */}}
{{- define "portcullis.redisCredentialsSecret" -}}
{{- printf "%s-redis-credentials" (include "portcullis.fullname" .) -}}
{{- end -}}

{{/* The default Redis URL handed to the operator, when given as a plain URL (no credentials). */}}
{{- define "portcullis.redisUrl" -}}
{{- if and .Values.redis.url .Values.redis.existingSecret.name -}}
{{- fail "set redis.url or redis.existingSecret.name, not both" -}}
{{- end -}}
{{- if and .Values.redis.url (not .Values.redis.existingSecret.name) -}}
{{- include "portcullis.plainRedisUrl" (dict "url" .Values.redis.url "what" "redis.url" "secret" "redis.existingSecret") -}}
{{- end -}}
{{- end -}}

{{/* The default Redis URL as name/key of a Secret in the release namespace (PORTCULLIS_DEFAULT_REDIS_SECRET). */}}
{{- define "portcullis.redisSecret" -}}
{{- if .Values.redis.existingSecret.name -}}
{{- printf "%s/%s" .Values.redis.existingSecret.name .Values.redis.existingSecret.key -}}
{{- else if include "portcullis.redisBundled" . -}}
{{- printf "%s/redis-url" (include "portcullis.redisCredentialsSecret" .) -}}
{{- end -}}
{{- end -}}

{{/* Redis of the auth servers as a plain URL: auth.redis.url, else redis.url (unless a Secret comes first). */}}
{{- define "portcullis.authRedisUrl" -}}
{{- if and .Values.auth.redis.url .Values.auth.redis.existingSecret.name -}}
{{- fail "set auth.redis.url or auth.redis.existingSecret.name, not both" -}}
{{- end -}}
{{- if .Values.auth.redis.url -}}
{{- include "portcullis.plainRedisUrl" (dict "url" .Values.auth.redis.url "what" "auth.redis.url" "secret" "auth.redis.existingSecret") -}}
{{- else if not .Values.auth.redis.existingSecret.name -}}
{{- include "portcullis.redisUrl" . -}}
{{- end -}}
{{- end -}}

{{/* Redis of the auth servers as name/key of a Secret: auth.redis.existingSecret, else the default's Secret, else the bundled auth-redis. */}}
{{- define "portcullis.authRedisSecret" -}}
{{- if .Values.auth.redis.existingSecret.name -}}
{{- printf "%s/%s" .Values.auth.redis.existingSecret.name .Values.auth.redis.existingSecret.key -}}
{{- else if not .Values.auth.redis.url -}}
{{- if include "portcullis.authRedisBundled" . -}}
{{- printf "%s/auth-redis-url" (include "portcullis.redisCredentialsSecret" .) -}}
{{- else -}}
{{- include "portcullis.redisSecret" . -}}
{{- end -}}
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
