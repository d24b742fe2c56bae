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
- firewallconfigurations.networking.liqo.io
- gatewayclients.networking.liqo.io
- gatewayservers.networking.liqo.io
- genevetunnels.networking.liqo.io
- internalfabrics.networking.liqo.io
- internalnodes.networking.liqo.io
- publickeies.networking.liqo.io
- routeconfigurations.networking.liqo.io
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

{{/* The API-server proxy's labels (upstream Liqo v1.2's name and component), its selector too. */}}
{{- define "liqo.proxyLabels" -}}
app.kubernetes.io/name: proxy
app.kubernetes.io/component: networking
app.kubernetes.io/part-of: liqo
{{- end -}}

{{/* The proxy's --allow targets beside the in-cluster API server (which it allows itself):
apiServerURL's host:port (443 or 80 when the URL has no port) and proxy.allow, as a YAML list. */}}
{{- define "liqo.proxyTargets" -}}
{{- $targets := list }}
{{- with .Values.apiServerURL }}
{{- $u := urlParse . }}
{{- if not $u.host }}{{ fail (printf "apiServerURL %q is not a URL with a host: give e.g. https://api.example.com:6443" .) }}{{ end }}
{{- $hostPort := $u.host }}
{{- if not (regexMatch ":[0-9]+$" $hostPort) }}{{ $hostPort = printf "%s:%s" $hostPort (ternary "80" "443" (eq $u.scheme "http")) }}{{ end }}
{{- $targets = append $targets $hostPort }}
{{- end }}
{{- range .Values.proxy.allow }}
{{- if not (regexMatch ":[0-9]+$" .) }}{{ fail (printf "proxy.allow %q is not host:port: give e.g. api.example.com:6443" .) }}{{ end }}
{{- $targets = append $targets . }}
{{- end }}
{{- toYaml (uniq $targets) }}
{{- end -}}

{{/* remoteNamespaces.podSecurity, refused at install unless it is a Pod Security level. */}}
{{- define "liqo.podSecurity" -}}
{{- $level := .Values.remoteNamespaces.podSecurity }}
{{- if not (has $level (list "privileged" "baseline" "restricted")) }}{{ fail (printf "remoteNamespaces.podSecurity %q is not a Pod Security level: give privileged, baseline or restricted" (toString $level)) }}{{ end }}
{{- $level }}
{{- end -}}

{{/* The fabric agent's labels (upstream Liqo v1.2's name and component), its selector too. */}}
{{- define "liqo.fabricLabels" -}}
app.kubernetes.io/name: fabric
app.kubernetes.io/component: networking
app.kubernetes.io/part-of: liqo
{{- end -}}

{{/* fabric.encap, refused at install unless auto, geneve or vxlan. */}}
{{- define "liqo.fabricEncap" -}}
{{- $e := .Values.fabric.encap }}
{{- if not (has $e (list "auto" "geneve" "vxlan")) }}{{ fail (printf "fabric.encap %q is not an encapsulation: give auto, geneve or vxlan" (toString $e)) }}{{ end }}
{{- $e }}
{{- end -}}
