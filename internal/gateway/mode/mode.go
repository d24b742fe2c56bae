// Package mode names the two ends of a gateway's tunnel. It imports nothing of the gateway's
// Linux data plane, so that the packages that only deploy or look at gateways (the provider,
// which is released for every OS, the controllers) can name an end without linking it.
package mode

// Mode says which end of the tunnel the gateway is.
type Mode string

const (
	// Server listens for the remote client; it reads a GatewayServer.
	Server Mode = "server"
	// Client connects to the remote server; it reads a GatewayClient.
	Client Mode = "client"
)
