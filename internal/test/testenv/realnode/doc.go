// Package realnode holds the programs of the real-node test bed's local images (see
// testenv.RealNodeOptions): pause, the pod sandboxes' process, and testhttp, the test image's
// HTTP server and client. testenv builds them into static binaries and OCI images; this
// package itself has no code.
package realnode
