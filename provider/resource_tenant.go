package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// tenantResource manages the Tenant of a consumer cluster in the provider cluster.
type tenantResource struct {
	objectResource[tenantModel, *tenantModel, *authv1beta1.Tenant]
}

type tenantModel struct {
	namespacedObject
	ConsumerClusterID types.String `tfsdk:"consumer_cluster_id"`
	AuthzPolicy       types.String `tfsdk:"authz_policy"`
	TenantCondition   types.String `tfsdk:"tenant_condition"`
	PublicKey         types.String `tfsdk:"public_key"`
	CSR               types.String `tfsdk:"csr"`
	Signature         types.String `tfsdk:"signature"`
	ProxyURL          types.String `tfsdk:"proxy_url"`
	PodSecurity       types.String `tfsdk:"pod_security"`
	TenantNamespace   types.String `tfsdk:"tenant_namespace"`
}

func newTenantResource() resource.Resource {
	r := &tenantResource{}
	r.objectKind = objectKind[tenantModel, *authv1beta1.Tenant]{
		typeName: "_tenant",
		kind:     "Tenant", noun: "tenant", needLiqo: true, namespaced: true, timeout: 5 * time.Minute,
		build: func(_ context.Context, w objectWrite[tenantModel], t *authv1beta1.Tenant) error {
			return w.plan.apply(t)
		},
		read:    tenantRefresh,
		written: tenantRefresh,
	}
	return r
}

// Schema describes liqo_tenant.
func (r *tenantResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	b64 := func(what string) schema.StringAttribute {
		return optionalString("The consumer's "+what+" from the handshake, base64-encoded (standard alphabet, with "+
			"padding, as `base64encode()` gives). Not needed with `authz_policy = \"TolerateNoHandshake\"`.", authBase64Validator())
	}
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Delete: true},
		"Provider side of a peering: the `Tenant` (`authentication.liqo.io/v1beta1`) that "+
			"represents a consumer cluster in its tenant namespace of the provider cluster. It decides whether the "+
			"consumer's ResourceSlices are accepted (`authz_policy`) and the tenant's administrative state "+
			"(`tenant_condition`: `Cordoned` stops new slices, `Drained` evicts the consumer's workloads). The object "+
			"carries the label `liqo.io/remote-cluster-id=<consumer_cluster_id>`.",
		map[string]schema.Attribute{
			"namespace": namespaceAttribute("Tenant namespace of the consumer in the provider cluster " +
				"(e.g. `liqo_tenant_namespace.x.name`). Changing it replaces the Tenant."),
			"name": derivedDefaultString("Name of the Tenant; default: the consumer cluster ID. Changing it replaces the Tenant.",
				dnsLabelValidators()...),
			"consumer_cluster_id": clusterIDAttribute("Cluster ID of the consumer cluster (`spec.clusterID`). The API makes " +
				"it immutable: changing it replaces the Tenant."),
			"authz_policy": enumAttribute(string(authv1beta1.KeysExchange),
				"How the consumer's ResourceSlices are authorized: `KeysExchange` (default, as in the API: only after a "+
					"handshake, i.e. with `public_key` and `signature`) or `TolerateNoHandshake` (declarative peering "+
					"without handshake, as in Liqo's declarative-peering guide). Updated in place.",
				string(authv1beta1.KeysExchange), string(authv1beta1.TolerateNoHandshake)),
			"tenant_condition": enumAttribute(string(authv1beta1.TenantConditionActive),
				"Administrative state of the tenant: `Active` (default), `Cordoned` (keeps its workloads, no new "+
					"ResourceSlices) or `Drained` (its workloads are evicted). Updated in place.",
				string(authv1beta1.TenantConditionActive), string(authv1beta1.TenantConditionCordoned),
				string(authv1beta1.TenantConditionDrained)),
			"public_key": b64("public key"),
			"csr":        b64("certificate signing request for its control-plane identity"),
			"signature":  b64("signature of the handshake nonce, made with its private key"),
			"proxy_url": optionalString("Proxy the consumer reaches this cluster's API server through (`spec.proxyURL`, as "+
				"`liqoctl generate tenant --proxy-url`): the identity issued to the consumer carries it. For an in-band peering, "+
				"this cluster's API-server proxy as the consumer reaches it through the tunnel (`liqo_peering.in_band` computes "+
				"it). Updated in place: the identity is issued again with it.", proxyURLValidator()),
			"pod_security": podSecurityAttribute(),
			"tenant_namespace": stableComputedString("The tenant namespace as reported by the controllers in " +
				"`status.tenantNamespace`; null until they report it."),
		})
}

// ModifyPlan shows the default name in the plan.
func (r *tenantResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if plan, ok := plannedModel[tenantModel](ctx, &r.clusterResource, req, resp); ok {
		planDerivedDefault(ctx, resp, "name", plan.Name, plan.ConsumerClusterID, sameValue)
	}
}

// apply writes the plan into a Tenant object.
func (m *tenantModel) apply(t *authv1beta1.Tenant) error {
	o := forge.TenantOptions{AuthzPolicy: authv1beta1.AuthzPolicy(m.AuthzPolicy.ValueString()),
		Condition: authv1beta1.TenantCondition(m.TenantCondition.ValueString()), ProxyURL: m.ProxyURL.ValueString(),
		PodSecurity: m.PodSecurity.ValueString()}
	var err error
	if o.PublicKey, err = authBytes(m.PublicKey); err != nil {
		return fmt.Errorf("public_key: %w", err)
	}
	if o.CSR, err = authBytes(m.CSR); err != nil {
		return fmt.Errorf("csr: %w", err)
	}
	if o.Signature, err = authBytes(m.Signature); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	forge.MutateTenant(t, m.ConsumerClusterID.ValueString(), o)
	return nil
}

// tenantRefresh sets the model from the Tenant.
func tenantRefresh(_ context.Context, c *clusterClient, m *tenantModel, t *authv1beta1.Tenant) error {
	m.ID = types.StringValue(objectID(c.name, t.Namespace, t.Name))
	m.Namespace = types.StringValue(t.Namespace)
	m.Name = types.StringValue(t.Name)
	m.ConsumerClusterID = types.StringValue(string(t.Spec.ClusterID))
	m.AuthzPolicy = types.StringValue(string(t.Spec.AuthzPolicy))
	m.TenantCondition = types.StringValue(string(t.Spec.TenantCondition))
	m.PublicKey = authBase64OrNull(t.Spec.PublicKey)
	m.CSR = authBase64OrNull(t.Spec.CSR)
	m.Signature = authBase64OrNull(t.Spec.Signature)
	m.ProxyURL = stringOrNull(t.Spec.ProxyURL)
	m.PodSecurity = stringOrNull(t.Annotations[consts.TenantPodSecurityAnnotation])
	m.TenantNamespace = stringOrNull(t.Status.TenantNamespace)
	return nil
}
