{{/*
The session password: the one already in the cluster if there is one, else a new one.
*/}}
{{- define "session-store.password" -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (printf "%s-auth" .Release.Name) -}}
{{- if and $existing $existing.data -}}
{{- index $existing.data "password" -}}
{{- else -}}
{{- randAlphaNum 24 | b64enc -}}
{{- end -}}
{{- end -}}
