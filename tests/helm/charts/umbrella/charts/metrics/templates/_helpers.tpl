{{- define "metrics.instanceId" -}}
metrics-{{ randAlpha 8 | lower }}
{{- end -}}
