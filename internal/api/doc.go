// Package api holds the custom resource types of the peering, one package per API group and
// version, wire-compatible with Liqo v1 (same groups, versions, kinds and field names for the
// subset we implement). The CRD manifests generated from these types live in package crds.
package api
