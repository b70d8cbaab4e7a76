{{/*
One role's Deployment. Parameters:
  .root       the top context
  .component  the role's label and name suffix (api, worker, service-report)
  .role       the role's values (replicas, resources, env, ...)
  .args       the container's arguments: the role (`taskflow` is the entrypoint)
  .secrets    the entries of secret.keys the role reads
  .http       true for the API: its port and probes
  .noReplicas true when an autoscaler owns the replica count
  .outputDir  true for the services: they write files to /data/output
*/}}
{{- define "taskflow.deployment" -}}
{{- $root := .root -}}
{{- $labelCtx := dict "root" $root "component" .component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "taskflow.fullname" $root }}-{{ .component }}
  labels:
    {{- include "taskflow.labels" $labelCtx | nindent 4 }}
spec:
  {{- if not .noReplicas }}
  replicas: {{ .role.replicas | int }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "taskflow.selectorLabels" $labelCtx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "taskflow.labels" $labelCtx | nindent 8 }}
      annotations:
        # changed secret settings roll the pods (a generated admin key is
        # kept across upgrades, so it is not part of this)
        checksum/secret: {{ toJson $root.Values.secret | sha256sum }}
        {{- with .role.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      terminationGracePeriodSeconds: {{ include "taskflow.terminationGrace" . }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ .component }}
          image: {{ include "taskflow.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- toYaml .args | nindent 12 }}
          env:
            {{- include "taskflow.env" . | trim | nindent 12 }}
          {{- if .http }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          livenessProbe:
            {{- toYaml .role.livenessProbe | nindent 12 }}
          readinessProbe:
            {{- toYaml .role.readinessProbe | nindent 12 }}
          {{- if and .role.preStopSleepSeconds (semverCompare ">=1.30.0-0" $root.Capabilities.KubeVersion.Version) }}
          lifecycle:
            preStop:
              sleep:
                seconds: {{ .role.preStopSleepSeconds | int }}
          {{- end }}
          {{- end }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml .role.resources | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if .outputDir }}
            - name: output
              mountPath: /data/output
            {{- end }}
            {{- if and $root.Values.artifacts.existingClaim (or .http .outputDir) }}
            - name: artifacts
              mountPath: /data/artifacts
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- if .outputDir }}
        - name: output
          emptyDir: {}
        {{- end }}
        {{- if and $root.Values.artifacts.existingClaim (or .http .outputDir) }}
        - name: artifacts
          persistentVolumeClaim:
            claimName: {{ $root.Values.artifacts.existingClaim }}
        {{- end }}
      {{- with .role.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .role.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .role.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
