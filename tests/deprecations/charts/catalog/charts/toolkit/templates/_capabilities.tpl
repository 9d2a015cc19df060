{{/*
Kubernetes version to render for: global override, chart override, else the cluster's.
Usage: {{ include "toolkit.capabilities.kubeVersion" (dict "context" $) }}
*/}}
{{- define "toolkit.capabilities.kubeVersion" -}}
{{- $context := .context -}}
{{- default (default $context.Capabilities.KubeVersion.Version $context.Values.kubeVersion) (($context.Values.global).kubeVersion) -}}
{{- end -}}

{{/*
apiVersion for PodDisruptionBudget.
*/}}
{{- define "toolkit.capabilities.policy.apiVersion" -}}
{{- $kubeVersion := include "toolkit.capabilities.kubeVersion" . -}}
{{- if and (not (empty $kubeVersion)) (semverCompare "<1.21-0" $kubeVersion) -}}
{{- print "policy/v1beta1" -}}
{{- else -}}
{{- print "policy/v1" -}}
{{- end -}}
{{- end -}}

{{/*
apiVersion for CronJob, from the served APIs.
*/}}
{{- define "toolkit.capabilities.cronjob.apiVersion" -}}
{{- if .context.Capabilities.APIVersions.Has "batch/v1" -}}
{{- print "batch/v1" -}}
{{- else -}}
{{- print "batch/v1beta1" -}}
{{- end -}}
{{- end -}}

{{/*
apiVersion for EndpointSlice.
*/}}
{{- define "toolkit.capabilities.endpointSlice.apiVersion" -}}
{{- if semverCompare ">=1.21-0" (include "toolkit.capabilities.kubeVersion" .) -}}
{{- print "discovery.k8s.io/v1" -}}
{{- else -}}
{{- print "discovery.k8s.io/v1beta1" -}}
{{- end -}}
{{- end -}}
