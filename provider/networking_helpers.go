package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// nwNamespaceAttribute is the `namespace` attribute of the networking objects: the tenant
// namespace they live in.
func nwNamespaceAttribute() schema.StringAttribute {
	return requiredReplaceString("Tenant namespace the object lives in (e.g. `liqo_tenant_namespace.<name>.name`). "+
		"Changing it replaces the object.", namespaceNameValidators()...)
}

// nwNameAttribute is the `name` attribute of a networking object with a fixed default name.
func nwNameAttribute(def, what string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true, Computed: true,
		Default:             stringdefault.StaticString(def),
		MarkdownDescription: fmt.Sprintf("Name of the %s; default: `%s`. Changing it replaces the object.", what, def),
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
		Validators:          []validator.String{nwNameValidator()},
	}
}

// nwRemoteClusterIDAttribute is the `remote_cluster_id` attribute: the value of the
// liqo.io/remote-cluster-id label. replace says whether changing it replaces the object.
func nwRemoteClusterIDAttribute(replace bool) schema.StringAttribute {
	const description = "Cluster ID of the peer this object is for: the label `liqo.io/remote-cluster-id`. "
	if replace {
		return clusterIDAttribute(description + "Changing it replaces the object.")
	}
	return schema.StringAttribute{
		Required:            true,
		MarkdownDescription: description + "Changing it relabels the object in place.",
		Validators:          []validator.String{clusterIDValidator()},
	}
}

// nwSecretRefAttribute is the `secret_ref` attribute of the gateways: their WireGuard keys.
func nwSecretRefAttribute() schema.StringAttribute {
	return optionalString("Name of the Secret in the same namespace holding the gateway's WireGuard keys "+
		"(`liqo_gateway_keys.<name>.name`). Left out, the operator makes its own keys. In place.", nwNameValidator())
}

// nwParseWGKey decodes a WireGuard key given in standard base64 with padding (44 characters).
// Strict decoding keeps the canonical form, so what is read back equals what was written.
func nwParseWGKey(s string) (wgtypes.Key, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("not standard base64 (as `wg genkey` prints): %w", err)
	}
	if len(b) != wgtypes.KeyLen {
		return wgtypes.Key{}, fmt.Errorf("decodes to %d bytes, a WireGuard key has %d", len(b), wgtypes.KeyLen)
	}
	k, err := wgtypes.NewKey(b)
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("not a WireGuard key: %w", err)
	}
	return k, nil
}

// nwInt32 converts an attribute that its validators keep within int32 (ports, MTUs); 0 if not.
func nwInt32(v int64) int32 {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0
	}
	return int32(v)
}

// nwStringList makes a list attribute from strings; null when empty.
func nwStringList(ctx context.Context, in []string) (types.List, diag.Diagnostics) {
	if len(in) == 0 {
		return types.ListNull(types.StringType), nil
	}
	return types.ListValueFrom(ctx, types.StringType, in)
}

// nwListStrings reads a list attribute of strings; nil when null or unknown.
func nwListStrings(ctx context.Context, l types.List) ([]string, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var out []string
	d := l.ElementsAs(ctx, &out, false)
	return out, d
}

// nwTemplateRef is the model of a gateway template reference (server_template, client_template).
type nwTemplateRef struct {
	Kind      types.String `tfsdk:"kind"`
	Name      types.String `tfsdk:"name"`
	Namespace types.String `tfsdk:"namespace"`
}

// nwTemplateAPIVersion is the API version of Liqo's gateway templates.
const nwTemplateAPIVersion = "networking.liqo.io/v1beta1"

var nwTemplateAttrTypes = map[string]attr.Type{
	"kind": types.StringType, "name": types.StringType, "namespace": types.StringType,
}

// nwTemplateAttribute is the template reference attribute with its default.
func nwTemplateAttribute(kind, name, what string) schema.SingleNestedAttribute {
	def := types.ObjectValueMust(nwTemplateAttrTypes, map[string]attr.Value{
		"kind": types.StringValue(kind), "name": types.StringValue(name), "namespace": types.StringValue(consts.LiqoNamespace),
	})
	return schema.SingleNestedAttribute{
		Optional: true, Computed: true,
		Default: objectdefault.StaticValue(def),
		MarkdownDescription: fmt.Sprintf("Template (API version `%s`) the %s's workload is made from; default: "+
			"`{ kind = \"%s\", name = \"%s\", namespace = \"%s\" }`, the template Liqo installs. Changing it updates the object in place.",
			nwTemplateAPIVersion, what, kind, name, consts.LiqoNamespace),
		Attributes: map[string]schema.Attribute{
			"kind": schema.StringAttribute{
				Required: true, MarkdownDescription: "Kind of the template, e.g. `" + kind + "`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"name": schema.StringAttribute{
				Required: true, MarkdownDescription: "Name of the template, e.g. `" + name + "`.",
				Validators: []validator.String{nwNameValidator()},
			},
			"namespace": schema.StringAttribute{
				Required: true, MarkdownDescription: "Namespace of the template, e.g. `" + consts.LiqoNamespace + "`.",
				Validators: namespaceNameValidators(),
			},
		},
	}
}

// nwTemplateToAPI converts the template attribute to an object reference.
func nwTemplateToAPI(ctx context.Context, o types.Object) (corev1.ObjectReference, diag.Diagnostics) {
	if o.IsNull() || o.IsUnknown() {
		return corev1.ObjectReference{}, nil
	}
	var m nwTemplateRef
	d := o.As(ctx, &m, basetypes.ObjectAsOptions{})
	return corev1.ObjectReference{
		APIVersion: nwTemplateAPIVersion,
		Kind:       m.Kind.ValueString(),
		Name:       m.Name.ValueString(),
		Namespace:  m.Namespace.ValueString(),
	}, d
}

// nwTemplateFromAPI converts an object reference to the template attribute; null when empty.
func nwTemplateFromAPI(ref corev1.ObjectReference) types.Object {
	if ref.Kind == "" && ref.Name == "" && ref.Namespace == "" {
		return types.ObjectNull(nwTemplateAttrTypes)
	}
	return types.ObjectValueMust(nwTemplateAttrTypes, map[string]attr.Value{
		"kind": types.StringValue(ref.Kind), "name": types.StringValue(ref.Name), "namespace": types.StringValue(ref.Namespace),
	})
}

// nwWait polls obj (re-read into a copy) until check says it is done. On timeout, the error
// names the module (resource type), the object, the cluster and what check last reported.
func nwWait(ctx context.Context, c *clusterClient, module, kind string, obj client.Object, timeout time.Duration,
	what, attribute string, check func(client.Object) (bool, string),
) error {
	last, seenOnce := "nothing read yet", false
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cur := obj.DeepCopyObject().(client.Object)
		if err := c.ctrl.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			// A read error (e.g. the deadline itself) does not hide what was last seen of the object.
			if !seenOnce {
				last = fmt.Sprintf("reading the object: %v", err)
			}
			return false, nil
		}
		done, seen := check(cur)
		last, seenOnce = seen, true
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %s %s in %s: waited %s for %s; last seen: %s (%w). The liqo controllers report it: check that "+
			"they run in that cluster and look at their logs, or raise the timeouts, or set %s = false to not wait",
			module, kind, objectID("", obj.GetNamespace(), obj.GetName()), c.describe(), timeout, what, last, err, attribute)
	}
	return nil
}
