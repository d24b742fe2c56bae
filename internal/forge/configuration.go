package forge

import (
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cidr"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// MutateConfiguration makes conf the Configuration of the remote cluster remoteID's networks, as
// the local cluster must know them: labelled consts.RemoteClusterIDLabel=remoteID, with the
// remote pod CIDRs and external CIDRs (none: no list) in spec.remote.cidr. The remapping in
// status is the configuration controller's.
func MutateConfiguration(conf *netv1beta1.Configuration, remoteID string, podCIDRs, externalCIDRs []string) {
	setLabels(conf, map[string]string{consts.RemoteClusterIDLabel: remoteID})
	conf.Spec.Remote.CIDR.Pod = cidr.FromStrings(podCIDRs)
	conf.Spec.Remote.CIDR.External = cidr.FromStrings(externalCIDRs)
}
