{{- define "gated.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Serving certificate for the admission webhook, as YAML: generated here unless cert-manager issues it.
*/}}
{{- define "gated.webhookCerts" -}}
{{- $svc := printf "%s-webhook.%s.svc" (include "gated.fullname" .) .Release.Namespace -}}
{{- if not .Values.webhook.certManager.enabled -}}
{{- $ca := genCA "gated-webhook-ca" 3650 -}}
{{- $cert := genSignedCert $svc nil (list $svc) 3650 $ca -}}
caCert: {{ $ca.Cert | b64enc }}
tlsCert: {{ $cert.Cert | b64enc }}
tlsKey: {{ $cert.Key | b64enc }}
{{- end -}}
{{- end -}}
