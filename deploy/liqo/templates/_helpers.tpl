{{/* The manager's ServiceAccount. */}}
{{- define "liqo.serviceAccountName" -}}
{{- required "serviceAccount.name must name the manager's ServiceAccount" .Values.serviceAccount.name -}}
{{- end -}}

{{/* The names of our CRDs (internal/api/crds; a test checks that they agree), which the
uninstall hook may delete. */}}
{{- define "liqo.crdNames" -}}
- identities.authentication.liqo.io
- resourceslices.authentication.liqo.io
- tenants.authentication.liqo.io
- foreignclusters.core.liqo.io
- ips.ipam.liqo.io
- networks.ipam.liqo.io
- configurations.networking.liqo.io
- connections.networking.liqo.io
- gatewayclients.networking.liqo.io
- gatewayservers.networking.liqo.io
- publickeies.networking.liqo.io
- wggatewayclienttemplates.networking.liqo.io
- wggatewayservertemplates.networking.liqo.io
- namespacemaps.offloading.liqo.io
- namespaceoffloadings.offloading.liqo.io
- shadowpods.offloading.liqo.io
- virtualnodes.offloading.liqo.io
{{- end -}}

{{/* The API groups of our kinds. */}}
{{- define "liqo.apiGroups" -}}
["core.liqo.io", "networking.liqo.io", "authentication.liqo.io", "offloading.liqo.io", "ipam.liqo.io"]
{{- end -}}

{{/* Scheduling of the manager's and the hook's pods. */}}
{{- define "liqo.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
