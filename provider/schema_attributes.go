package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The attribute constructors the resources' schemas share: each makes an attribute of one kind
// and one behaviour, and the Schema methods name it and describe it.

// clusterAttribute is the `cluster` attribute of every single-cluster resource.
func clusterAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Key of the provider's `clusters` map naming the cluster to manage this object in; " +
			"default: the provider block's own connection. Changing it replaces the object.",
		PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
	}
}

// idAttribute is the `id` attribute: the import ID of the object.
func idAttribute(form string) schema.StringAttribute {
	return stableComputedString("Import ID of the object: `" + form + "` (the cluster part is omitted for the " +
		"provider's own connection).")
}

// optionalString is an optional string with no default.
func optionalString(description string, validators ...validator.String) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: description, Validators: validators}
}

// requiredReplaceString is a required string; changing it replaces the object.
func requiredReplaceString(description string, validators ...validator.String) schema.StringAttribute {
	return schema.StringAttribute{
		Required:            true,
		MarkdownDescription: description,
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
		Validators:          validators,
	}
}

// namespaceAttribute is a required `namespace` (a DNS label); changing it replaces the object.
func namespaceAttribute(description string) schema.StringAttribute {
	return requiredReplaceString(description, dnsLabelValidators()...)
}

// clusterIDAttribute is a required cluster ID; changing it replaces the object.
func clusterIDAttribute(description string) schema.StringAttribute {
	return requiredReplaceString(description, clusterIDValidator())
}

// derivedDefaultString is an optional string whose default the resource's ModifyPlan derives
// from other attributes, so that the plan shows it; changing it replaces the object.
func derivedDefaultString(description string, validators ...validator.String) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true, Computed: true,
		MarkdownDescription: description,
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()},
		Validators:          validators,
	}
}

// computedString is a read-only string, as the cluster reports it.
func computedString(description string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: description}
}

// stableComputedString is a read-only string that plans keep at its value in the state.
func stableComputedString(description string) schema.StringAttribute {
	return schema.StringAttribute{
		Computed: true, MarkdownDescription: description,
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
	}
}

// computedStringList is a read-only list of strings, as the cluster reports it.
func computedStringList(description string) schema.ListAttribute {
	return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: description}
}

// computedStringMap is a read-only map of strings, as the cluster reports it.
func computedStringMap(description string) schema.MapAttribute {
	return schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: description}
}

// enumAttribute is an optional string, one of values, that defaults to def; a change applies
// in place.
func enumAttribute(def, description string, values ...string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true, Computed: true, Default: stringdefault.StaticString(def),
		MarkdownDescription: description,
		Validators:          []validator.String{stringvalidator.OneOf(values...)},
	}
}

// flagAttribute is an optional bool that defaults to def; a change applies in place.
func flagAttribute(def bool, description string) schema.BoolAttribute {
	return schema.BoolAttribute{
		Optional: true, Computed: true, Default: booldefault.StaticBool(def),
		MarkdownDescription: description,
	}
}
