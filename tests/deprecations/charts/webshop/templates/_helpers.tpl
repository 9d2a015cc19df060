{{/*
Name of the release's objects.
*/}}
{{- define "webshop.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Kubernetes version the chart renders for (overridable for offline rendering).
*/}}
{{- define "webshop.kubeVersion" -}}
{{- default .Capabilities.KubeVersion.Version .Values.kubeVersionOverride -}}
{{- end -}}

{{/*
Ingress API: networking.k8s.io/v1 from 1.19, v1beta1 from 1.14, extensions before.
*/}}
{{- define "webshop.ingress.apiVersion" -}}
{{- if semverCompare ">=1.19-0" (include "webshop.kubeVersion" .) -}}
networking.k8s.io/v1
{{- else if semverCompare "^1.14-0" .Capabilities.KubeVersion.GitVersion -}}
networking.k8s.io/v1beta1
{{- else -}}
extensions/v1beta1
{{- end -}}
{{- end -}}

{{/*
HPA API, by minor version (GKE reports minors like "25+").
*/}}
{{- define "webshop.hpa.apiVersion" -}}
{{- if and (eq .Capabilities.KubeVersion.Major "1") (ge (int (trimSuffix "+" .Capabilities.KubeVersion.Minor)) 23) -}}
{{- print "autoscaling/v2" -}}
{{- else -}}
{{- print "autoscaling/v2beta1" -}}
{{- end -}}
{{- end -}}

{{/*
CronJob API, by what the cluster serves.
*/}}
{{- define "webshop.cronjob.apiVersion" -}}
{{- if .Capabilities.APIVersions.Has "batch/v1/CronJob" -}}
{{- print "batch/v1" -}}
{{- else -}}
{{- print "batch/v1beta1" -}}
{{- end -}}
{{- end -}}

{{/*
API priority and fairness: assumes v1beta3 from 1.26 on (v1 came in 1.29).
*/}}
{{- define "webshop.flowcontrol.apiVersion" -}}
{{- if semverCompare ">=1.26-0" .Capabilities.KubeVersion.Version -}}
flowcontrol.apiserver.k8s.io/v1beta3
{{- else -}}
flowcontrol.apiserver.k8s.io/v1beta2
{{- end -}}
{{- end -}}
