package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// podSecurityAttribute is the optional Pod Security level of a consumer on its provider
// (liqo_tenant, liqo_peering), kept as the Tenant's consts.TenantPodSecurityAnnotation; null is
// the provider's default.
func podSecurityAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Pod Security level of the consumer's pods on the provider: `privileged`, `baseline` or " +
			"`restricted`. The consumer's remote namespaces (where its offloaded pods run) are labelled " +
			"`pod-security.kubernetes.io/enforce=<level>`, and the provider refuses a ShadowPod whose pod the level refuses, " +
			"naming the fields (the consumer's pod then fails with that message). Null (default): the provider's default, " +
			"its controller manager's `--remote-namespace-pod-security` (the chart's `remoteNamespaces.podSecurity`), " +
			"`baseline` unless set otherwise. `privileged` lets the consumer run privileged pods that can mount the " +
			"provider node's files: grant it only to a consumer trusted with the provider's nodes. Kept as the annotation `" +
			consts.TenantPodSecurityAnnotation + "` of the Tenant. Updated in place: the remote namespaces are relabelled and " +
			"new pods are checked against the new level; running pods keep running.",
		Validators: []validator.String{stringvalidator.OneOf(consts.PodSecurityLevels...)},
	}
}
