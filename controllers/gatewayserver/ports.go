package gatewayserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
)

// portConflict tells whether another GatewayServer of the cluster keeps gw's UDP port
// (workload.PortKeeper): then gw's gateway must not run, and the reason is recorded on gw, in
// consts.PortConflictAnnotation (which liqo_peering's wait reads) and in a Warning Event
// PortInUse, each time it changes. Once the port is free, the annotation goes.
func (r *Reconciler) portConflict(ctx context.Context, gw *netv1beta1.GatewayServer, port int32) (bool, error) {
	keeper, err := workload.PortKeeper(ctx, r.Client, gw)
	if err != nil {
		return false, fmt.Errorf("GatewayServer %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	msg := ""
	if keeper != nil {
		free, err := workload.FreePort(ctx, r.Client, port)
		if err != nil {
			return false, fmt.Errorf("GatewayServer %s/%s: %w", gw.Namespace, gw.Name, err)
		}
		msg = workload.PortConflict(keeper, port, free)
	}
	if gw.Annotations[consts.PortConflictAnnotation] == msg {
		return keeper != nil, nil
	}
	patch := client.MergeFrom(gw.DeepCopy())
	if msg == "" {
		delete(gw.Annotations, consts.PortConflictAnnotation)
	} else {
		if gw.Annotations == nil {
			gw.Annotations = map[string]string{}
		}
		gw.Annotations[consts.PortConflictAnnotation] = msg
	}
	if err := r.Client.Patch(ctx, gw, patch); err != nil {
		return false, fmt.Errorf("recording the port conflict of GatewayServer %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	if msg != "" && r.Recorder != nil {
		r.Recorder.Eventf(gw, nil, corev1.EventTypeWarning, consts.PortInUseReason, "Listen",
			"%s: its gateway does not run until it has a port of its own (spec.endpoint.port)", msg)
	}
	return keeper != nil, nil
}
