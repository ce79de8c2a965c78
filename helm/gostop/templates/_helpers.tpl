{{/* Names, labels and the checks every template shares. */}}

{{- define "gostop.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gostop.fullname" -}}
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

{{- define "gostop.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; "component" is passed by the caller. */}}
{{- define "gostop.labels" -}}
helm.sh/chart: {{ include "gostop.chart" .root }}
app.kubernetes.io/name: {{ include "gostop.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gostop
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "gostop.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gostop.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "gostop.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "gostop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gostop.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding GOSTOP_TOKEN_SECRET and the other secret settings. */}}
{{- define "gostop.secretName" -}}
{{- default (include "gostop.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "gostop.redisName" -}}
{{- printf "%s-redis" (include "gostop.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "external", "inChart" or "memory". */}}
{{- define "gostop.store" -}}
{{- if or .Values.redis.url .Values.redis.urlFromSecret }}external{{ else if .Values.redis.inChart.enabled }}inChart{{ else }}memory{{ end }}
{{- end }}

{{/* The metrics ports, one per worker, as a JSON list of {"name", "port"}: with config.workers N
the server runs N processes and worker i serves its metrics on ports.metrics + i
(service/workers.py). The first is named "metrics", the others "metrics-<i>"; the container, the
Service, the ServiceMonitor and the NetworkPolicy list them all, so that every worker is scraped. */}}
{{- define "gostop.metricsPorts" -}}
{{- $ports := list }}
{{- range $i := until (int .Values.config.workers) }}
{{- $name := ternary "metrics" (printf "metrics-%d" $i) (eq $i 0) }}
{{- $ports = append $ports (dict "name" $name "port" (add (int $.Values.ports.metrics) $i)) }}
{{- end }}
{{- toJson $ports }}
{{- end }}

{{/* host:port the gRPC server binds (GOSTOP_LISTEN). */}}
{{- define "gostop.listen" -}}
{{- printf "%s:%d" .Values.listenHost (int .Values.ports.grpc) }}
{{- end }}

{{/* host:port the HTTP server binds (GOSTOP_HTTP_LISTEN), or "off" with ports.http 0. */}}
{{- define "gostop.httpListen" -}}
{{- if int .Values.ports.http }}
{{- printf "%s:%d" .Values.listenHost (int .Values.ports.http) }}
{{- else -}}
off
{{- end }}
{{- end }}

{{/* GOSTOP_CORS_ORIGINS: config.corsOrigins, then https://<host> of every exact httpRoute hostname
(the web table's own origin: behind a gateway that terminates TLS the server sees the request as
plain HTTP, so it cannot recognise the page's https origin as its own). Wildcard hostnames name no
one origin and add nothing. */}}
{{- define "gostop.corsOrigins" -}}
{{- $origins := list }}
{{- range .Values.config.corsOrigins }}
{{- $origins = append $origins . }}
{{- end }}
{{- if and .Values.httpRoute.enabled (int .Values.ports.http) }}
{{- range .Values.httpRoute.hostnames }}
{{- if not (hasPrefix "*." .) }}
{{- $origins = append $origins (printf "https://%s" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- if has "*" $origins }}*{{ else }}{{ $origins | uniq | join "," }}{{ end }}
{{- end }}

{{/* The in-cluster address of the service (for the tournament Job). */}}
{{- define "gostop.serverAddress" -}}
{{- printf "%s.%s.svc:%d" (include "gostop.fullname" .) .Release.Namespace (int .Values.ports.grpc) }}
{{- end }}

{{/* The bot workers' Deployment, Service, HPA, PDB, NetworkPolicy and ServiceMonitor. */}}
{{- define "gostop.botWorkersName" -}}
{{- printf "%s-bot-workers" (include "gostop.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The bot key of the chart's Secret (GOSTOP_BOT_KEYS): secrets.botKey; else, with bot workers, the
one installed (read back at an upgrade) or a new one; else none. */}}
{{- define "gostop.botKey" -}}
{{- if .Values.secrets.botKey }}
{{- .Values.secrets.botKey }}
{{- else if .Values.botWorkers.enabled }}
{{- $installed := lookup "v1" "Secret" .Release.Namespace (include "gostop.fullname" .) }}
{{- if and $installed $installed.data (hasKey $installed.data "GOSTOP_BOT_KEYS") }}
{{- index $installed.data "GOSTOP_BOT_KEYS" | b64dec }}
{{- else }}
{{- randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- end }}

{{/* GOSTOP_REDIS_URL of a container without the server's envFrom (the bot workers), from where the
server's comes: the ConfigMap for the in-chart Redis, the Secret (the chart's, or
secrets.existingSecret with redis.urlFromSecret) for an external one. */}}
{{- define "gostop.redisUrlEnv" -}}
- name: GOSTOP_REDIS_URL
  valueFrom:
    {{- include "gostop.redisUrlFrom" . | nindent 4 }}
{{- end }}

{{/* The valueFrom of the server's GOSTOP_REDIS_URL (with Redis only): the ConfigMap's key for the
in-chart Redis, the Secret's (the chart's, or secrets.existingSecret with redis.urlFromSecret) for an
external one. The bot workers' GOSTOP_REDIS_URL and the tournament's GOSTOP_LADDER come from it. */}}
{{- define "gostop.redisUrlFrom" -}}
{{- $inChart := eq (include "gostop.store" .) "inChart" -}}
{{ if $inChart }}configMapKeyRef{{ else }}secretKeyRef{{ end }}:
  name: {{ if $inChart }}{{ include "gostop.fullname" . }}{{ else }}{{ include "gostop.secretName" . }}{{ end }}
  key: GOSTOP_REDIS_URL
{{- end }}

{{/* Egress rules of the server and the bot workers: the cluster DNS, and Redis (the in-chart one,
or networkPolicy.redis.ports at networkPolicy.redis.to). */}}
{{- define "gostop.networkPolicy.egressDnsRedis" -}}
{{- $np := .Values.networkPolicy -}}
# DNS.
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  to:
    - namespaceSelector:
        {{- toYaml $np.dns.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml $np.dns.podSelector | nindent 8 }}
{{- $store := include "gostop.store" . }}
{{- if eq $store "inChart" }}
# The in-chart Redis.
- ports:
    - port: 6379
      protocol: TCP
  to:
    - podSelector:
        matchLabels:
          {{- include "gostop.selectorLabels" (dict "root" . "component" "redis") | nindent 10 }}
{{- else if eq $store "external" }}
# The external Redis (Sentinel and Cluster nodes included).
- ports:
    {{- range $np.redis.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $np.redis.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* PromQL label matchers of this release's series. */}}
{{- define "gostop.promSelector" -}}
{{- default (printf "job=%q, namespace=%q" (include "gostop.fullname" .) .Release.Namespace) .Values.metrics.prometheusRule.selector }}
{{- end }}

{{/* PromQL label matchers of the bot workers' series (their ServiceMonitor's job label). */}}
{{- define "gostop.botPromSelector" -}}
{{- default (printf "job=%q, namespace=%q" (include "gostop.botWorkersName" .) .Release.Namespace) .Values.metrics.prometheusRule.botWorkerSelector }}
{{- end }}

{{/* Refuse combinations that install but cannot work. */}}
{{- define "gostop.validate" -}}
{{- $store := include "gostop.store" . }}
{{- if and .Values.botWorkers.enabled (eq $store "memory") }}
{{- fail "botWorkers.enabled needs Redis: a bot worker takes its turns from Redis only. Set redis.url (or redis.urlFromSecret, or redis.inChart.enabled); with the memory store the server plays bot seats itself (config.botWorker auto)" }}
{{- end }}
{{- $bw := .Values.botWorkers }}
{{- if and $bw.enabled $bw.autoscaling.enabled (gt (int $bw.autoscaling.minReplicas) (int $bw.autoscaling.maxReplicas)) }}
{{- fail "botWorkers.autoscaling.minReplicas must not exceed botWorkers.autoscaling.maxReplicas" }}
{{- end }}
{{- if gt (int .Values.config.botBudgetMs) (int .Values.config.botBudgetMaxMs) }}
{{- fail (printf "config.botBudgetMs (%v) must not exceed config.botBudgetMaxMs (%v)" .Values.config.botBudgetMs .Values.config.botBudgetMaxMs) }}
{{- end }}
{{- if and (eq $store "memory") (or .Values.autoscaling.enabled (gt (int .Values.replicaCount) 1)) }}
{{- fail "the memory store keeps games inside one process: set redis.url (or redis.urlFromSecret with GOSTOP_REDIS_URL in secrets.existingSecret, or redis.inChart.enabled) to run more than one replica or to autoscale" }}
{{- end }}
{{- if and (eq $store "memory") (gt (int .Values.config.workers) 1) }}
{{- fail "config.workers above 1 needs a shared store: set redis.url (or redis.urlFromSecret, or redis.inChart.enabled)" }}
{{- end }}
{{- $firstMetrics := int .Values.ports.metrics }}
{{- $lastMetrics := sub (add $firstMetrics (int .Values.config.workers)) 1 }}
{{- if gt $lastMetrics 65535 }}
{{- fail (printf "the worker metrics ports %d-%d (ports.metrics + i for each of config.workers) go past 65535: lower ports.metrics" $firstMetrics $lastMetrics) }}
{{- end }}
{{- if and (ge (int .Values.ports.grpc) $firstMetrics) (le (int .Values.ports.grpc) $lastMetrics) }}
{{- fail (printf "ports.grpc (%d) is among the worker metrics ports %d-%d (ports.metrics + i for each of config.workers): move one of them" (int .Values.ports.grpc) $firstMetrics $lastMetrics) }}
{{- end }}
{{- if and .Values.redis.urlFromSecret (not .Values.secrets.existingSecret) }}
{{- fail "redis.urlFromSecret reads GOSTOP_REDIS_URL from your own Secret: set secrets.existingSecret to its name" }}
{{- end }}
{{- if and .Values.redis.urlFromSecret .Values.redis.url }}
{{- fail "set either redis.url or redis.urlFromSecret, not both" }}
{{- end }}
{{- if and .Values.redis.url .Values.secrets.existingSecret }}
{{- fail "redis.url is kept in the chart's Secret, which secrets.existingSecret replaces: put GOSTOP_REDIS_URL in your Secret and set redis.urlFromSecret=true instead" }}
{{- end }}
{{- $drain := float64 .Values.config.drainSeconds }}
{{- $needed := addf $drain (float64 .Values.preStopSleepSeconds) }}
{{- if le (float64 .Values.terminationGracePeriodSeconds) $needed }}
{{- fail (printf "terminationGracePeriodSeconds (%v) must be more than preStopSleepSeconds + config.drainSeconds (%v), or calls are cut before the drain ends" .Values.terminationGracePeriodSeconds $needed) }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret)" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- if and .Values.grpcRoute.enabled (not .Values.grpcRoute.parentRefs) }}
{{- fail "grpcRoute.enabled needs grpcRoute.parentRefs (the Gateway to attach to)" }}
{{- end }}
{{- $http := int .Values.ports.http }}
{{- if $http }}
{{- if or (eq $http (int .Values.ports.grpc)) (and (ge $http $firstMetrics) (le $http $lastMetrics)) }}
{{- fail (printf "ports.http (%d) is the gRPC port or among the worker metrics ports %d-%d (ports.metrics + i for each of config.workers): move one of them" $http $firstMetrics $lastMetrics) }}
{{- end }}
{{- end }}
{{- if .Values.httpRoute.enabled }}
{{- if not $http }}
{{- fail "httpRoute.enabled needs the HTTP port: set ports.http (8080)" }}
{{- end }}
{{- if not .Values.httpRoute.parentRefs }}
{{- fail "httpRoute.enabled needs httpRoute.parentRefs (the Gateway to attach to)" }}
{{- end }}
{{- if .Values.grpcRoute.enabled }}
{{- include "gostop.validateRouteOverlap" . }}
{{- end }}
{{- end }}
{{- end }}

{{/* Gateway API accepts only one of an HTTPRoute and a GRPCRoute attached to one listener with
intersecting hostnames (the oldest): the other would silently not route. Refuse the two routes when
they name the same Gateway (name and namespace, the release's by default) on the same listener (equal
sectionName, or none on either: the whole Gateway) and their hostnames intersect (none: every host;
"*.example.com" takes in its subdomains). */}}
{{- define "gostop.validateRouteOverlap" -}}
{{- $ns := .Release.Namespace }}
{{- $grpcHosts := .Values.grpcRoute.hostnames }}
{{- $httpHosts := .Values.httpRoute.hostnames }}
{{- $hostsMeet := or (not $grpcHosts) (not $httpHosts) }}
{{- range $a := $grpcHosts }}
{{- range $b := $httpHosts }}
{{- if or (eq $a $b) (and (hasPrefix "*." $a) (hasSuffix (trimPrefix "*" $a) $b)) (and (hasPrefix "*." $b) (hasSuffix (trimPrefix "*" $b) $a)) }}
{{- $hostsMeet = true }}
{{- end }}
{{- end }}
{{- end }}
{{- if $hostsMeet }}
{{- range $g := .Values.grpcRoute.parentRefs }}
{{- range $h := $.Values.httpRoute.parentRefs }}
{{- $sameGateway := and (eq $g.name $h.name) (eq (default $ns $g.namespace) (default $ns $h.namespace)) (eq (default "Gateway" $g.kind) (default "Gateway" $h.kind)) }}
{{- $sameListener := or (not $g.sectionName) (not $h.sectionName) (eq $g.sectionName $h.sectionName) }}
{{- if and $sameGateway $sameListener }}
{{- fail (printf "grpcRoute and httpRoute attach to the same listener of Gateway %s/%s with intersecting hostnames: Gateway API accepts only one of the two routes there. give each route hostnames the other's do not cover (e.g. api.example.com for gRPC, play.example.com for browsers) or its own listener (parentRefs[].sectionName)" (default $ns $g.namespace) $g.name) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
