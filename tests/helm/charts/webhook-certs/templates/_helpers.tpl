{{/*
Short name of the chart, at most 63 characters.
*/}}
{{- define "gateway-admission.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Release-qualified name.
*/}}
{{- define "gateway-admission.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "gateway-admission.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gateway-admission.labels" -}}
app.kubernetes.io/name: {{ include "gateway-admission.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gateway-admission.webhookService" -}}
{{- printf "%s-webhook" (include "gateway-admission.fullname" .) -}}
{{- end -}}

{{/*
Webhook TLS material as YAML (caCert, tlsCert, tlsKey; base64). Taken from values when
all three are given; otherwise a CA and a serving certificate are generated here, anew
on every render.
*/}}
{{- define "gateway-admission.webhookTLS" -}}
{{- $svc := include "gateway-admission.webhookService" . -}}
{{- if and .Values.webhookTLS.caCert .Values.webhookTLS.cert .Values.webhookTLS.key -}}
caCert: {{ .Values.webhookTLS.caCert | b64enc }}
tlsCert: {{ .Values.webhookTLS.cert | b64enc }}
tlsKey: {{ .Values.webhookTLS.key | b64enc }}
{{- else -}}
{{- $names := list (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) -}}
{{- $ca := genCA (printf "%s-ca" $svc) 3650 -}}
{{- $leaf := genSignedCert $svc nil $names 3650 $ca -}}
caCert: {{ $ca.Cert | b64enc }}
tlsCert: {{ $leaf.Cert | b64enc }}
tlsKey: {{ $leaf.Key | b64enc }}
{{- end -}}
{{- end -}}
