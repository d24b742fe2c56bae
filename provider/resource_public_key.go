package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ resource.Resource                = (*publicKeyResource)(nil)
	_ resource.ResourceWithConfigure   = (*publicKeyResource)(nil)
	_ resource.ResourceWithImportState = (*publicKeyResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*publicKeyResource)(nil)
)

// publicKeyResource manages a PublicKey: the peer gateway's WireGuard public key.
type publicKeyResource struct {
	clusterResource
}

type publicKeyModel struct {
	ID              types.String   `tfsdk:"id"`
	Cluster         types.String   `tfsdk:"cluster"`
	Namespace       types.String   `tfsdk:"namespace"`
	Name            types.String   `tfsdk:"name"`
	RemoteClusterID types.String   `tfsdk:"remote_cluster_id"`
	PublicKey       types.String   `tfsdk:"public_key"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`
}

func newPublicKeyResource() resource.Resource { return &publicKeyResource{} }

// Metadata names the resource liqo_public_key.
func (r *publicKeyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_public_key"
}

// Schema describes liqo_public_key.
func (r *publicKeyResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The peer gateway's WireGuard public key: a `PublicKey` (networking.liqo.io/v1beta1) in the " +
			"tenant namespace, labelled `liqo.io/remote-cluster-id` (the peer) and `networking.liqo.io/gateway-resource=true`, " +
			"which the local gateway uses to authenticate the peer. Feed it the peer's `liqo_gateway_keys.public_key`.",
		Attributes: map[string]schema.Attribute{
			"id":                idAttribute("[cluster/]namespace/name"),
			"cluster":           clusterAttribute(),
			"namespace":         nwNamespaceAttribute(),
			"name":              nwNameAttribute("gw-publickey", "PublicKey"),
			"remote_cluster_id": nwRemoteClusterIDAttribute(false),
			"public_key": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The peer's WireGuard public key: 32 bytes in base64 (44 characters, as `wg pubkey` " +
					"prints). Changing it updates the object in place.",
				Validators: []validator.String{nwWGKeyValidator{}},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true}),
		},
	}
}

// ModifyPlan checks the cluster key.
func (r *publicKeyResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.clusterResource.ModifyPlan(ctx, req, resp)
}

func (m *publicKeyModel) apply(pk *networkingv1beta1.PublicKey) error {
	key, err := nwParseWGKey(m.PublicKey.ValueString())
	if err != nil {
		return fmt.Errorf("public_key: %w", err)
	}
	nwSetLabels(pk, nwLabels(m.RemoteClusterID.ValueString(), true))
	pk.Spec.PublicKey = append([]byte(nil), key[:]...)
	return nil
}

// Create makes the PublicKey.
func (r *publicKeyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan publicKeyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Creating PublicKey"
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	pk := &networkingv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Name: plan.Name.ValueString(), Namespace: plan.Namespace.ValueString()}}
	if err := plan.apply(pk); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if err := c.ctrl.Create(ctx, pk); err != nil {
		resp.Diagnostics.AddError(summary, nwCreateError("PublicKey", pk, c, err))
		return
	}
	plan.ID = types.StringValue(objectID(c.name, pk.Namespace, pk.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Read refreshes the key and the label; a PublicKey deleted out of band leaves the state.
func (r *publicKeyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state publicKeyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Reading PublicKey"
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	pk := &networkingv1beta1.PublicKey{}
	key := client.ObjectKey{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}
	found, err := readObject(ctx, c, "PublicKey", key, pk)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	state.PublicKey = stringOrNull(base64.StdEncoding.EncodeToString(pk.Spec.PublicKey))
	state.RemoteClusterID = types.StringValue(pk.Labels[consts.RemoteClusterIDLabel])
	state.ID = types.StringValue(objectID(c.name, pk.Namespace, pk.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the key and the labels in place.
func (r *publicKeyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan publicKeyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Updating PublicKey"
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	pk := &networkingv1beta1.PublicKey{}
	key := client.ObjectKey{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	if err := patchObject(ctx, c, "PublicKey", key, pk, func() error { return plan.apply(pk) }); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	plan.ID = types.StringValue(objectID(c.name, pk.Namespace, pk.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the PublicKey and waits until it is gone.
func (r *publicKeyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state publicKeyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 2*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Deleting PublicKey", err.Error())
		return
	}
	pk := &networkingv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}}
	if err := deleteAndWait(ctx, c, pk, timeout); err != nil {
		resp.Diagnostics.AddError("Deleting PublicKey", err.Error())
	}
}

// ImportState takes `[cluster/]namespace/name`.
func (r *publicKeyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	nwImport(ctx, &r.clusterResource, "PublicKey", &networkingv1beta1.PublicKey{}, req, resp)
}
