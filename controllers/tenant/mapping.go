package tenant

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// tenantsOfCluster maps an object labelled with a remote cluster ID to that cluster's Tenants.
func tenantsOfCluster(c client.Client) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		id := o.GetLabels()[consts.RemoteClusterIDLabel]
		if id == "" {
			return nil
		}
		tenants := &authv1beta1.TenantList{}
		if err := c.List(ctx, tenants); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, t := range tenants.Items {
			if string(t.Spec.ClusterID) == id {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
			}
		}
		return out
	})
}
