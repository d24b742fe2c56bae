package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
)

// standardResources maps the dedicated attributes of requested resources to their names.
var standardResources = []struct {
	attr string
	name corev1.ResourceName
}{
	{"cpu", corev1.ResourceCPU},
	{"memory", corev1.ResourceMemory},
	{"pods", corev1.ResourcePods},
	{"ephemeral_storage", corev1.ResourceEphemeralStorage},
}

// isStandardResource tells whether a resource has a dedicated attribute.
func isStandardResource(name corev1.ResourceName) bool {
	for _, s := range standardResources {
		if s.name == name {
			return true
		}
	}
	return false
}

// quantitiesModel is the resources asked of a provider: the standard ones in their own
// attributes, any other in `resources`. The models of liqo_resource_slice and liqo_peering
// embed it.
type quantitiesModel struct {
	CPU              types.String `tfsdk:"cpu"`
	Memory           types.String `tfsdk:"memory"`
	Pods             types.String `tfsdk:"pods"`
	EphemeralStorage types.String `tfsdk:"ephemeral_storage"`
	Resources        types.Map    `tfsdk:"resources"`
}

// standard returns the attribute of a standard resource.
func (m *quantitiesModel) standard(attr string) types.String {
	switch attr {
	case "cpu":
		return m.CPU
	case "memory":
		return m.Memory
	case "pods":
		return m.Pods
	default:
		return m.EphemeralStorage
	}
}

// setStandard sets the attribute of a standard resource.
func (m *quantitiesModel) setStandard(attr string, v types.String) {
	switch attr {
	case "cpu":
		m.CPU = v
	case "memory":
		m.Memory = v
	case "pods":
		m.Pods = v
	default:
		m.EphemeralStorage = v
	}
}

// known tells whether every requested quantity is known in the plan.
func (m *quantitiesModel) known() bool {
	for _, s := range standardResources {
		if m.standard(s.attr).IsUnknown() {
			return false
		}
	}
	return !m.Resources.IsUnknown()
}

// requested builds the resource list asked of the provider; an error names the attribute.
func (m *quantitiesModel) requested(ctx context.Context) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	add := func(attr, name string, v types.String) error {
		if v.IsNull() || v.IsUnknown() {
			return nil
		}
		q, err := kresource.ParseQuantity(v.ValueString())
		if err != nil {
			return fmt.Errorf("%s: %q is not a Kubernetes quantity such as 4, 500m or 8Gi", attr, v.ValueString())
		}
		out[corev1.ResourceName(name)] = q
		return nil
	}
	for _, s := range standardResources {
		if err := add(s.attr, string(s.name), m.standard(s.attr)); err != nil {
			return nil, err
		}
	}
	if !m.Resources.IsNull() && !m.Resources.IsUnknown() {
		extra := map[string]types.String{}
		if d := m.Resources.ElementsAs(ctx, &extra, false); d.HasError() {
			return nil, fmt.Errorf("reading resources: %w", diagsError(d))
		}
		for k, v := range extra {
			if err := add(fmt.Sprintf("resources[%q]", k), k, v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// set sets the quantities from list, those that asked says are requested ones, keeping the
// configured spelling of equal quantities; `resources` stays null when it was and nothing
// non-standard is requested.
func (m *quantitiesModel) set(ctx context.Context, list corev1.ResourceList, asked func(corev1.ResourceName) bool) error {
	for _, s := range standardResources {
		if q, ok := list[s.name]; ok && asked(s.name) {
			m.setStandard(s.attr, offloadingQuantityString(m.standard(s.attr), q))
		} else {
			m.setStandard(s.attr, types.StringNull())
		}
	}
	prior := map[string]types.String{}
	if !m.Resources.IsNull() && !m.Resources.IsUnknown() {
		if d := m.Resources.ElementsAs(ctx, &prior, false); d.HasError() {
			return fmt.Errorf("reading resources: %w", diagsError(d))
		}
	}
	extra := map[string]types.String{}
	for name, q := range list {
		if isStandardResource(name) || !asked(name) {
			continue
		}
		p, ok := prior[string(name)]
		if !ok {
			p = types.StringNull()
		}
		extra[string(name)] = offloadingQuantityString(p, q)
	}
	if len(extra) == 0 && (m.Resources.IsNull() || m.Resources.IsUnknown()) {
		m.Resources = types.MapNull(types.StringType)
		return nil
	}
	v, d := types.MapValueFrom(ctx, types.StringType, extra)
	if d.HasError() {
		return fmt.Errorf("building resources: %w", diagsError(d))
	}
	m.Resources = v
	return nil
}

// quantityAttribute is a requested quantity of a resource (a Kubernetes quantity).
func quantityAttribute(required bool, description string) schema.StringAttribute {
	return schema.StringAttribute{
		Required: required, Optional: !required,
		MarkdownDescription: description,
		Validators:          []validator.String{quantityValidator()},
	}
}

// withValidators returns a with more validators.
func withValidators(a schema.StringAttribute, v ...validator.String) schema.StringAttribute {
	a.Validators = append(append([]validator.String{}, a.Validators...), v...)
	return a
}

// quantitiesResourcesAttribute is the `resources` attribute: the non-standard resources asked
// for, by resource name, as quantities.
func quantitiesResourcesAttribute(description string) schema.MapAttribute {
	return schema.MapAttribute{
		Optional: true, ElementType: types.StringType,
		MarkdownDescription: description,
		Validators: []validator.Map{
			mapvalidator.KeysAre(
				stringvalidator.NoneOf("cpu", "memory", "pods", "ephemeral-storage"),
				stringvalidator.RegexMatches(resourceSliceResourceNamePattern, "must be a resource name such as nvidia.com/gpu"),
			),
			mapvalidator.ValueStringsAre(quantityValidator()),
		},
	}
}

// resourceListValue makes a map attribute of quantities by resource name (granted, capacity);
// null when empty.
func resourceListValue(ctx context.Context, l corev1.ResourceList) (types.Map, error) {
	out := make(map[string]string, len(l))
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return stringMapValue(ctx, out)
}
