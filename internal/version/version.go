// Package version is the one place of this project's version: the images' tags, the chart's
// appVersion (checked by the chart's test), the virtual kubelet's reported version and what the
// sandbox records of its installation all follow it.
package version

// Version is the project's version, without a leading "v".
const Version = "0.1.0"

// Registry is the repository the project's images are published under: an image is
// Registry/<name>:Version (internal/images builds them; the chart's values.yaml names them).
const Registry = "ghcr.io/peerkit"

// ControllerManagerImage is the controller manager's image at this version.
const ControllerManagerImage = Registry + "/liqo-controller-manager:" + Version

// GatewayImage is the WireGuard gateway's image at this version.
const GatewayImage = Registry + "/liqo-gateway:" + Version

// VirtualKubeletImage is the virtual kubelet's image at this version (the chart's
// virtualKubelet.image, run per virtual node when virtualKubelet.mode is deployment).
const VirtualKubeletImage = Registry + "/liqo-virtual-kubelet:" + Version

// ProxyImage is the API-server proxy's image at this version (the chart's proxy.image: the
// in-band control plane's HTTP CONNECT proxy).
const ProxyImage = Registry + "/liqo-proxy:" + Version

// FabricImage is the network fabric's node agent's image at this version (the chart's
// fabric.image: the liqo-fabric DaemonSet).
const FabricImage = Registry + "/liqo-fabric:" + Version
