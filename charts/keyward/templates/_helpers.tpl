{{/* The chart name, or nameOverride. */}}
{{- define "keyward.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name when it already
contains the chart name, else <release>-<chart>.
*/}}
{{- define "keyward.fullname" -}}
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

{{- define "keyward.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "keyward.selectorLabels" -}}
app.kubernetes.io/name: {{ include "keyward.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "keyward.labels" -}}
helm.sh/chart: {{ include "keyward.chart" . }}
{{ include "keyward.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: keyward
{{- end }}

{{/*
The webhook's pods and objects (templates/webhook.yaml): a name label of their own, so neither the
operator's Deployment, Service, PodDisruptionBudget nor NetworkPolicy selects a webhook pod, and
the webhook's Service selects webhook pods only.
*/}}
{{- define "keyward.webhookName" -}}
{{- printf "%s-webhook" (include "keyward.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "keyward.webhookSelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-webhook" (include "keyward.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "keyward.webhookLabels" -}}
helm.sh/chart: {{ include "keyward.chart" . }}
{{ include "keyward.webhookSelectorLabels" . }}
app.kubernetes.io/component: webhook
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: keyward
{{- end }}

{{- define "keyward.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "keyward.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "keyward.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "keyward.leaseName" -}}
{{- default (printf "%s-leader" (include "keyward.fullname" .)) .Values.leaderElection.id }}
{{- end }}

{{/*
"true" when metrics.port equals health.port: keyward then serves /metrics, /healthz and /readyz
from one server on that port (src/main.ts, startEndpoints), so the pod has one containerPort,
named metrics, and the probes use it. Empty otherwise.
*/}}
{{- define "keyward.sharedPort" -}}
{{- if eq (int .Values.metrics.port) (int .Values.health.port) }}true{{ end }}
{{- end }}

{{- define "keyward.healthPortName" -}}
{{- if include "keyward.sharedPort" . }}metrics{{ else }}health{{ end }}
{{- end }}

{{/*
What keyward does in a namespace it watches, and nothing more (see src/ for every call):
- its six namespaced kinds: informers list and watch them; finalizers and annotations are merge patches;
- their /status: whole-status merge patches;
- accesstokens/finalizers: update, which the apiserver checks (OwnerReferencesPermissionEnforcement)
  when keyward writes a Secret whose owner reference to its AccessToken sets blockOwnerDeletion;
  no other kind owns anything;
- Secrets: ProviderConfig reads its token and patches its keyward.dev/in-use finalizer onto it;
  AccessToken reads the Secret it issues into (writing it is "keyward.secretWriterRules", granted
  only where accessTokens.namespaces says). `patch` stays here, in every watched namespace, for
  that finalizer alone: a ProviderConfig's credentials Secret may be in any namespace keyward
  watches, and RBAC cannot limit a verb to Secrets carrying a label
  (keyward.dev/credentials=true). It therefore also covers an AccessToken's Secret anywhere, so
  keyward itself refuses AccessTokens outside accessTokens.namespaces (--access-token-namespaces,
  NamespaceNotAllowed) before it reads, mints or writes anything;
- Events: written as core/v1 Events (src/kube/events.ts), created then patched on repeats.
*/}}
{{- define "keyward.rules" -}}
- apiGroups: ["keyward.dev"]
  resources:
    # BEGIN generated kinds by `npm run generate` from src/resources/registry.ts; do not edit
    - providerconfigs
    - projects
    - projectmemberships
    - accesstokens
    - certificateprofiles
    - secretsyncs
    # END generated kinds
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["keyward.dev"]
  resources:
    # BEGIN generated status by `npm run generate` from src/resources/registry.ts; do not edit
    - providerconfigs/status
    - projects/status
    - projectmemberships/status
    - accesstokens/status
    - certificateprofiles/status
    - secretsyncs/status
    # END generated status
  verbs: ["get", "patch", "update"]
- apiGroups: ["keyward.dev"]
  resources: ["accesstokens/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["secrets"]
  # patch: only the keyward.dev/in-use finalizer of credentials Secrets (see above).
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}

{{/*
AccessTokens create the Secret they issue into, patch it with each new token, and delete the old
one when spec.secretName changes (src/resources/accesstoken.ts). patch is listed here too, so
this role holds every write an AccessToken makes, though the main role's patch (for the
credentials finalizer) also covers it; keyward refuses AccessTokens outside these namespaces.
*/}}
{{- define "keyward.secretWriterRules" -}}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create", "patch", "delete"]
{{- end }}

{{/*
ClusterProviderConfigs (clusterProviderConfig.enabled, cluster-wide installs only): read them
and write their /status; list and watch Namespaces, whose labels their namespaceSelector matches
(get when a cache has not synced yet). Their credentials Secrets are read through a Role in the
credentials namespace only ("keyward.credentialsNamespace").
*/}}
{{- define "keyward.clusterProviderConfigRules" -}}
- apiGroups: ["keyward.dev"]
  resources: ["clusterproviderconfigs"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["keyward.dev"]
  resources: ["clusterproviderconfigs/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
{{- end }}

{{/* Where ClusterProviderConfigs' credentials Secrets live: clusterProviderConfig.credentialsNamespace, else the release namespace. */}}
{{- define "keyward.credentialsNamespace" -}}
{{- default .Release.Namespace .Values.clusterProviderConfig.credentialsNamespace }}
{{- end }}

{{/* "true" when keyward serves ClusterProviderConfigs: asked for, and a cluster-wide install. */}}
{{- define "keyward.clusterProviderConfigs" -}}
{{- if and .Values.clusterProviderConfig.enabled (empty .Values.watchNamespaces) }}true{{ end }}
{{- end }}

{{/* A duration of whole seconds, minutes or hours ("90s", "5m", "1h"; the schema allows no other) in seconds. */}}
{{- define "keyward.seconds" -}}
{{- $n := regexFind "^[0-9]+" . -}}
{{- mul (int $n) (get (dict "s" 1 "m" 60 "h" 3600) (trimPrefix $n .)) -}}
{{- end }}

{{/* A duration as keyward reads one ("500ms", "1.5s", "10m", "1h"; the schema's pattern) in milliseconds, rounded as keyward rounds it. */}}
{{- define "keyward.milliseconds" -}}
{{- $n := regexFind "^[0-9]+([.][0-9]+)?" . -}}
{{- round (mulf (float64 $n) (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) (trimPrefix $n .))) 0 -}}
{{- end }}

{{/* A size as keyward reads one ("1048576", "512Ki", "16Mi", "1Gi"; the schema's pattern) in bytes: decimal (int64 would read a leading 0 as octal) and as a float (no wrap-around). */}}
{{- define "keyward.bytes" -}}
{{- $n := regexFind "^[0-9]+" . -}}
{{- mulf (float64 $n) (get (dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824) (trimPrefix $n .)) -}}
{{- end }}

{{/*
The NetworkPolicy's egress rules to the service, from allowedBaseUrls: one rule per port (the
URL's, else 443 for https and 80 for http). A URL whose host is an IP address opens its port to
that address only; a hostname cannot be matched by a NetworkPolicy, so its port is opened to any
address. With no allowedBaseUrls (each Secret's annotation decides) or ["*"] the service could be
anywhere: networkPolicy.servicePorts are opened to any address. networkPolicy.extraEgress narrows
nothing; it adds rules.
*/}}
{{- define "keyward.serviceEgress" -}}
{{- $byPort := dict }}
{{- $everyUrl := or (empty .Values.allowedBaseUrls) (has "*" .Values.allowedBaseUrls) }}
{{- range without (.Values.allowedBaseUrls | default list) "*" }}
{{- $url := urlParse . }}
{{- $hostPort := $url.host }}
{{- $host := $hostPort }}
{{- $port := "" }}
{{- if hasPrefix "[" $hostPort }}
{{- $host = regexReplaceAll "^\\[([^\\]]+)\\].*$" $hostPort "${1}" }}
{{- $port = trimPrefix ":" (regexFind ":[0-9]+$" (regexReplaceAll "^\\[[^\\]]+\\]" $hostPort "")) }}
{{- else if contains ":" $hostPort }}
{{- $host = first (splitList ":" $hostPort) }}
{{- $port = last (splitList ":" $hostPort) }}
{{- end }}
{{- if eq $port "" }}{{ $port = ternary "443" "80" (eq $url.scheme "https") }}{{ end }}
{{- $cidr := "any" }}
{{- if regexMatch "^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $host }}{{ $cidr = printf "%s/32" $host }}
{{- else if contains ":" $host }}{{ $cidr = printf "%s/128" $host }}{{ end }}
{{- $_ := set $byPort $port (uniq (append (get $byPort $port | default list) $cidr)) }}
{{- end }}
{{- if $everyUrl }}
{{- range .Values.networkPolicy.servicePorts }}{{ $_ := set $byPort (toString .) (list "any") }}{{ end }}
{{- end }}
{{- range $port := keys $byPort | sortAlpha }}
{{- $cidrs := get $byPort $port }}
- ports:
    - port: {{ $port }}
      protocol: TCP
  {{- if not (has "any" $cidrs) }}
  to:
    {{- range $cidrs | sortAlpha }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/* How /metrics is protected: metrics.auth, else kubernetes cluster-wide and localhost in a namespaced install. */}}
{{- define "keyward.metricsAuth" -}}
{{- if .Values.metrics.auth }}{{ .Values.metrics.auth }}{{ else if empty .Values.watchNamespaces }}kubernetes{{ else }}localhost{{ end }}
{{- end }}

{{/*
Labels of keyward's CRDs (templates/crds/, generated by `npm run generate` from the same source
as crds/): the chart's labels, component crds.
*/}}
{{- define "keyward.crdLabels" -}}
{{ include "keyward.labels" . }}
app.kubernetes.io/component: crds
{{- end }}

{{/*
The version the CRDs store (crds.storageVersion). v1beta1 is served only with the conversion
webhook, so storing it without the webhook would render CRDs with no storage version.
*/}}
{{- define "keyward.crdStorageVersion" -}}
{{- if and (eq .Values.crds.storageVersion "v1beta1") (not .Values.webhook.enabled) -}}
{{- fail "crds.storageVersion=v1beta1 needs webhook.enabled: v1beta1 is served only through the conversion webhook" -}}
{{- end -}}
{{- .Values.crds.storageVersion -}}
{{- end }}

{{/*
Annotations of keyward's CRDs, with crds.keep: deleting a CRD deletes every custom resource of
its kind in every namespace, so nothing that merely stops rendering them may delete them.
- helm.sh/resource-policy: keep — helm uninstall, a rollback to a release without them, and an
  upgrade with crds.enabled=false leave them in the cluster.
- argocd.argoproj.io/sync-options: Prune=false,Delete=false — Argo CD does not honour Helm's
  policy the same way (it renders the chart with `helm template`, and since 2.8 reads keep as
  Delete=false only): Delete=false keeps them when the Application is deleted, Prune=false when
  they leave the rendered chart (crds.enabled=false, or a chart without them); the Application
  then shows them OutOfSync instead of deleting them.
*/}}
{{- define "keyward.crdAnnotations" -}}
{{- $lines := list -}}
{{- if .Values.crds.keep -}}
{{- $lines = append $lines "helm.sh/resource-policy: keep" -}}
{{- $lines = append $lines "argocd.argoproj.io/sync-options: Prune=false,Delete=false" -}}
{{- end -}}
{{- /* cert-manager's CA injector writes the Certificate's CA into the CRDs' caBundle. */ -}}
{{- if and .Values.webhook.enabled .Values.webhook.certManager.enabled -}}
{{- $lines = append $lines (printf "cert-manager.io/inject-ca-from: %s/%s-webhook" .Release.Namespace (include "keyward.fullname" .)) -}}
{{- end -}}
{{- join "\n" $lines -}}
{{- end }}

{{/*
How the chart renders a custom resource it creates (providerConfig.create,
clusterProviderConfig.create); called with (dict "root" $ "kind" "<Kind>" "namespace" "<ns or empty>" "name" "<name>").
- hook: keyward's CRDs are not in the cluster yet (a first install). Helm maps every object of a
  release before it creates the first, so an ordinary ProviderConfig would fail the whole install
  ("no matches for kind ... ensure CRDs are installed first"); a post-install hook is mapped when
  it runs, after the release's CRDs exist.
- unmanaged: the object exists and a hook made it. It is not part of the release (Helm would
  adopt it but never patch it: it diffs an adopted object's rendering against itself), so the
  chart leaves it alone and the notes say so; deleted, the next upgrade creates it as a release object.
- release: an ordinary object of the release.
*/}}
{{- define "keyward.customResourceMode" -}}
{{- if not (.root.Capabilities.APIVersions.Has (printf "keyward.dev/v1alpha1/%s" .kind)) }}hook
{{- else }}
{{- /* lookup finds nothing under helm template and --dry-run: an ordinary object there. */}}
{{- $live := lookup "keyward.dev/v1alpha1" .kind .namespace .name }}
{{- if and $live (hasKey (($live.metadata).annotations | default dict) "helm.sh/hook") }}unmanaged
{{- else }}release
{{- end }}
{{- end }}
{{- end }}

{{/*
The annotations of a custom resource the chart creates, in the mode above. keep: helm uninstall
leaves it, as it leaves every keyward resource (its users still name it).
*/}}
{{- define "keyward.customResourceAnnotations" -}}
helm.sh/resource-policy: keep
{{- if eq .mode "hook" }}
helm.sh/hook: post-install,post-upgrade
{{- /* Not the default before-hook-creation: that would delete a ProviderConfig in use. */}}
helm.sh/hook-delete-policy: hook-failed
{{- end }}
{{- end }}

{{/*
Whether a prometheus-operator object is rendered ("true" or empty); called with
(dict "root" $ "key" "serviceMonitor" "kind" "ServiceMonitor"). Enabled, it is rendered when
the cluster serves its CRD; where it does not, renderMode says: skipIfMissing leaves it out (the
notes say so) rather than fail the whole install, failIfMissing fails, alwaysRender renders it
(helm template and renderers that do not pass the cluster's API versions).
*/}}
{{- define "keyward.monitoringObject" -}}
{{- $values := index .root.Values .key }}
{{- if $values.enabled }}
{{- $mode := $values.renderMode | default "skipIfMissing" }}
{{- if or (.root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind)) (eq $mode "alwaysRender") }}true
{{- else if eq $mode "failIfMissing" }}
{{- fail (printf "%s.enabled: the cluster serves no monitoring.coreos.com/v1 %s; install prometheus-operator's CRDs first, or set %s.renderMode skipIfMissing" .key .kind .key) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
keyward's CRDs by name (as the chart's templates/crds render them): the webhook's ClusterRole may
write the caBundle of these and no other CRD.
*/}}
{{- define "keyward.crdNames" -}}
- accesstokens.keyward.dev
- certificateprofiles.keyward.dev
- clusterproviderconfigs.keyward.dev
- projectmemberships.keyward.dev
- projects.keyward.dev
- providerconfigs.keyward.dev
- secretsyncs.keyward.dev
{{- end }}
