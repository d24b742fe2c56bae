package tenant

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// tenantsOfCluster maps an object labelled with a remote cluster ID to that cluster's Tenants.
func tenantsOfCluster(c client.Client) handler.EventHandler {
	return enqueue.Listed(c, func() client.ObjectList { return &authv1beta1.TenantList{} }, nil,
		func(o client.Object, t *authv1beta1.Tenant) bool {
			id := o.GetLabels()[consts.RemoteClusterIDLabel]
			return id != "" && string(t.Spec.ClusterID) == id
		})
}
