{{/* The manager's ServiceAccount. */}}
{{- define "liqo.serviceAccountName" -}}
{{- required "serviceAccount.name must name the manager's ServiceAccount" .Values.serviceAccount.name -}}
{{- end -}}

{{/* The names of our CRDs (internal/api/crds; a test checks that they agree), which the
uninstall hook may delete. */}}
{{- define "liqo.crdNames" -}}
- identities.authentication.liqo.io
- renews.authentication.liqo.io
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
- shadowendpointslices.offloading.liqo.io
- shadowpods.offloading.liqo.io
- virtualnodes.offloading.liqo.io
- contracts.market.peerkit.io
- offers.market.peerkit.io
{{- end -}}

{{/* The API groups of our kinds. */}}
{{- define "liqo.apiGroups" -}}
["core.liqo.io", "networking.liqo.io", "authentication.liqo.io", "offloading.liqo.io", "ipam.liqo.io", "market.peerkit.io"]
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

{{/* liqo.ipv4Range: the IPv4 network CIDR .cidr (chart value .name) as "first last", its first
and last addresses as integers. It fails, naming the value, unless .cidr is a.b.c.d/n with the
network's first address (as the manager's check refuses host bits). */}}
{{- define "liqo.ipv4Range" -}}
{{- $bad := printf "%s %q is not a network CIDR such as 10.244.0.0/16 (a.b.c.d/n, the network's first address)" .name .cidr }}
{{- if not (regexMatch `^(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}/(0|[1-9][0-9]?)$` .cidr) }}{{ fail $bad }}{{ end }}
{{- $parts := splitList "/" .cidr }}
{{- $bits := atoi (index $parts 1) }}
{{- if gt $bits 32 }}{{ fail $bad }}{{ end }}
{{- $ip := 0 }}
{{- range splitList "." (index $parts 0) }}
{{- if gt (atoi .) 255 }}{{ fail $bad }}{{ end }}
{{- $ip = add (mul $ip 256) (atoi .) }}
{{- end }}
{{- $size := 1 }}
{{- range until (sub 32 $bits | int) }}{{ $size = mul $size 2 }}{{ end }}
{{- if ne (mod $ip $size | int) 0 }}{{ fail $bad }}{{ end }}
{{- printf "%d %d" $ip (sub (add $ip $size) 1) }}
{{- end -}}

{{/* liqo.checkCIDRs renders nothing; it fails the install when internalCIDR overlaps a pod
CIDR, serviceCIDR or externalCIDR (with the manager's defaults for the empty ones), naming
both values and CIDRs, as the manager's own check at start does (clusteridentity.Validate; a
test checks that both give the same verdict). IPv4 only: a value with ':' (IPv6) cannot
overlap the IPv4 internal CIDR and is left to the manager's check; internalCIDR must be IPv4
and /30 or larger (the manager's fabric IPAM refuses the rest). */}}
{{- define "liqo.checkCIDRs" -}}
{{- $internal := dict "name" "internalCIDR" "cidr" (toString .Values.internalCIDR) }}
{{- if not $internal.cidr }}{{ $_ := set $internal "cidr" "10.80.0.0/16" }}{{ $_ := set $internal "name" "internalCIDR (default)" }}{{ end }}
{{- if or (contains ":" $internal.cidr) (regexMatch `/3[12]$` $internal.cidr) }}
{{- fail (printf "%s %q is not an IPv4 network CIDR of /30 or larger such as 10.80.0.0/16: the fabric gives each node and gateway an IPv4 address of it" $internal.name $internal.cidr) }}
{{- end }}
{{- $in := splitList " " (include "liqo.ipv4Range" $internal) }}
{{- $others := list }}
{{- $podName := ternary "podCIDRs" "podCIDR" (not (empty .Values.podCIDRs)) }}
{{- range (.Values.podCIDRs | default (list .Values.podCIDR)) }}
{{- range splitList "," (toString .) }}
{{- with trim . }}{{ $others = append $others (dict "name" $podName "cidr" .) }}{{ end }}
{{- end }}
{{- end }}
{{- with toString .Values.serviceCIDR }}{{ $others = append $others (dict "name" "serviceCIDR" "cidr" .) }}{{ end }}
{{- $others = append $others (dict "name" (ternary "externalCIDR" "externalCIDR (default)" (not (empty .Values.externalCIDR))) "cidr" (toString .Values.externalCIDR | default "10.70.0.0/16")) }}
{{- range $others }}
{{- if not (contains ":" .cidr) }}
{{- $r := splitList " " (include "liqo.ipv4Range" .) }}
{{- if and (le (atoi (index $in 0)) (atoi (index $r 1))) (le (atoi (index $r 0)) (atoi (index $in 1))) }}
{{- fail (printf "%s %s overlaps %s %s: the network fabric's internal CIDR must be a network of its own; set internalCIDR (default 10.80.0.0/16) to a CIDR outside the pod, service and external CIDRs" $internal.name $internal.cidr .name .cidr) }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
