// Package version is the one place of this project's version: the images' tags, the chart's
// appVersion (checked by the chart's test), the virtual kubelet's reported version and what the
// sandbox records of its installation all follow it.
package version

// Version is the project's version, without a leading "v".
const Version = "0.1.0"

// ControllerManagerImage is the controller manager's image at this version.
const ControllerManagerImage = "ghcr.io/peerkit/liqo-controller-manager:" + Version
