package consts

const (
	// PortConflictAnnotation is, on a GatewayServer whose UDP port another GatewayServer of the
	// cluster listens on already, why its gateway does not run (a message naming that one and
	// the fix). The GatewayServer controller writes it and removes it once the port is free;
	// liqo_peering's and liqo_gateway_server's waits read it. Ours, not upstream Liqo's (whose
	// GatewayServer status has no field for it); a Warning Event PortInUse says it too.
	PortConflictAnnotation = "networking.liqo.io/port-conflict"
	// PortInUseReason is the reason of the Warning Event on such a GatewayServer.
	PortInUseReason = "PortInUse"
)
