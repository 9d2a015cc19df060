{{- define "cache.password" -}}
{{- .Values.password | default (randAlphaNum 24) -}}
{{- end -}}
