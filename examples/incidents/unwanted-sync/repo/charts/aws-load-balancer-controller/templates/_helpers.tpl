{{/* Chart name, or nameOverride. */}}
{{- define "aws-load-balancer-controller.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-qualified name; the release name alone when it already contains the chart name. */}}
{{- define "aws-load-balancer-controller.fullname" -}}
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

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "aws-load-balancer-controller.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "aws-load-balancer-controller.labels" -}}
helm.sh/chart: {{ include "aws-load-balancer-controller.chart" . }}
{{ include "aws-load-balancer-controller.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels the Deployment selects its pods by (and the webhook Service too). */}}
{{- define "aws-load-balancer-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aws-load-balancer-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "aws-load-balancer-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "aws-load-balancer-controller.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/*
TLS material for the admission webhooks, as YAML whose values are base64: caCert, clientCert,
clientKey. When webhookTLS.caCert, webhookTLS.cert and webhookTLS.key are all set, they are used
as given. Otherwise a CA and a serving certificate for the webhook Service are generated here,
which gives new values on every render (helm template, helm upgrade, Argo CD manifest generation).
*/}}
{{- define "aws-load-balancer-controller.webhookCerts" -}}
{{- if and .Values.webhookTLS.caCert .Values.webhookTLS.cert .Values.webhookTLS.key -}}
caCert: {{ .Values.webhookTLS.caCert | b64enc }}
clientCert: {{ .Values.webhookTLS.cert | b64enc }}
clientKey: {{ .Values.webhookTLS.key | b64enc }}
{{- else -}}
{{- $service := "aws-load-balancer-webhook-service" -}}
{{- $dnsNames := list (printf "%s.%s" $service .Release.Namespace) (printf "%s.%s.svc" $service .Release.Namespace) -}}
{{- $ca := genCA "aws-load-balancer-controller-ca" 3650 -}}
{{- $serving := genSignedCert (include "aws-load-balancer-controller.fullname" .) nil $dnsNames 3650 $ca -}}
caCert: {{ $ca.Cert | b64enc }}
clientCert: {{ $serving.Cert | b64enc }}
clientKey: {{ $serving.Key | b64enc }}
{{- end -}}
{{- end -}}
