{{/* Names and labels shared by every object. */}}
{{- define "netloom.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "netloom.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "netloom.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "netloom.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{- define "netloom.secretName" -}}
{{- if .Values.secret.existingSecret -}}{{ .Values.secret.existingSecret }}{{- else -}}{{ include "netloom.fullname" . }}{{- end -}}
{{- end -}}

{{- define "netloom.mediaClaim" -}}
{{- if .Values.media.existingClaim -}}{{ .Values.media.existingClaim }}{{- else -}}{{ include "netloom.fullname" . }}-media{{- end -}}
{{- end -}}

{{/* What every Netloom container gets: the settings, the secrets, the media volume, no root. */}}
{{- define "netloom.appContainer" -}}
image: {{ include "netloom.image" .root }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
envFrom:
  - configMapRef:
      name: {{ include "netloom.fullname" .root }}
  - secretRef:
      name: {{ include "netloom.secretName" .root }}
securityContext:
  {{- toYaml .root.Values.containerSecurityContext | nindent 2 }}
volumeMounts:
  - name: media
    mountPath: /data/media
  - name: tmp
    mountPath: /tmp
{{- end -}}

{{- define "netloom.appVolumes" -}}
- name: media
  persistentVolumeClaim:
    claimName: {{ include "netloom.mediaClaim" . }}
- name: tmp
  emptyDir: {}
{{- end -}}

{{/* The Redis lists (under the instance's prefix) a train pool is the first to fit: KEDA's triggers. */}}
{{- define "netloom.poolCapacity" -}}
{{- if gt (int .gpus) 0 -}}{{ .gpus }}{{- else -}}{{ .processes | default 1 }}{{- end -}}
{{- end -}}
