package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offloadingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ list.ListResourceWithConfigure = (*objectList[tenantModel, *tenantModel, *authv1beta1.Tenant])(nil)
	_ list.ListResourceWithConfigure = (*objectList[resourceSliceModel, *resourceSliceModel, *authv1beta1.ResourceSlice])(nil)
	_ list.ListResourceWithConfigure = (*objectList[namespaceOffloadingModel, *namespaceOffloadingModel,
		*offloadingv1beta1.NamespaceOffloading])(nil)
)

// listFilter is an optional attribute of a list block's config that keeps the objects whose
// value is the one configured.
type listFilter[O client.Object] struct {
	name, description string
	value             func(O) string
}

// listKind describes to objectList the objects of an objectResource's kind it lists.
type listKind[O client.Object] struct {
	description string
	newList     func() client.ObjectList
	// manages (optional) tells whether the resource manages such an object (e.g. not a copy
	// replicated from another cluster).
	manages func(O) bool
	// filter (optional) is the config's filter besides `namespace`.
	filter *listFilter[O]
	// about describes the object in its result's display name, after its import ID.
	about func(O) string
}

// objectList is the list resource of an objectResource: the objects of its kind in one
// cluster (the config's `cluster`). Each result carries the resource's identity and, when the
// query includes resources, the state the resource's read hook makes of the object listed, as
// its Read after an import would.
type objectList[M any, P interface {
	*M
	objectModel
}, O client.Object] struct {
	listUser
	// res is the managed resource, with its kind and hooks.
	res *objectResource[M, P, O]
	listKind[O]
}

// Metadata names the list resource after the managed resource it lists.
func (l *objectList[M, P, O]) Metadata(ctx context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	l.res.Metadata(ctx, req, resp)
}

// ListResourceConfigSchema describes the list block's config: `cluster`, `namespace` and the
// kind's filter.
func (l *objectList[M, P, O]) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	attrs := map[string]listschema.Attribute{
		"cluster": listClusterAttribute(l.res.kind + "s"),
		"namespace": listschema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Only the " + l.res.kind + "s of this namespace; default: every namespace.",
			Validators:          namespaceNameValidators(),
		},
	}
	if l.filter != nil {
		attrs[l.filter.name] = listschema.StringAttribute{
			Optional: true, MarkdownDescription: l.filter.description, Validators: []validator.String{clusterIDValidator()},
		}
	}
	resp.Schema = listschema.Schema{MarkdownDescription: l.description, Attributes: attrs}
}

// List lists the objects of the kind in the cluster and namespace of the config that the
// resource manages and the filter keeps; objects being deleted are left out, as an import
// would find nothing.
func (l *objectList[M, P, O]) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	summary := "Listing " + l.res.kind + "s"
	var diags diag.Diagnostics
	cluster := configString(ctx, req.Config, "cluster", &diags)
	namespace := configString(ctx, req.Config, "namespace", &diags)
	want := ""
	if l.filter != nil {
		want = configString(ctx, req.Config, l.filter.name, &diags)
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	c, err := l.client(ctx, types.StringValue(cluster), l.res.needLiqo)
	if err != nil {
		stream.Results = listError(summary, listClusterError("cluster", cluster, err))
		return
	}
	objects := l.newList()
	if err := c.ctrl.List(ctx, objects, client.InNamespace(namespace)); err != nil {
		stream.Results = listError(summary, fmt.Sprintf("listing %ss in %s: %v", l.res.kind, c.describe(), err))
		return
	}
	items, err := meta.ExtractList(objects)
	if err != nil {
		stream.Results = listError(summary, fmt.Sprintf("reading the %ss of %s: %v", l.res.kind, c.describe(), err))
		return
	}
	stream.Results = func(push func(list.ListResult) bool) {
		push = limited(req.Limit, push)
		for _, item := range items {
			obj, ok := item.(O)
			if !ok || !l.keeps(c, obj, want) {
				continue
			}
			if !push(l.result(ctx, req, c, obj)) {
				return
			}
		}
	}
}

// keeps tells whether the list shows obj: not being deleted, managed by the resource, with the
// filter's value (want, "" for any) and importable.
func (l *objectList[M, P, O]) keeps(c *clusterClient, obj O, want string) bool {
	switch {
	case obj.GetDeletionTimestamp() != nil,
		l.manages != nil && !l.manages(obj),
		want != "" && l.filter.value(obj) != want,
		l.res.imported != nil && l.res.imported(c, obj) != nil:
		return false
	}
	return true
}

// result is the list result of obj, in the cluster of c: the identity an import would give and,
// when the query includes resources, the state the read hook makes of it.
func (l *objectList[M, P, O]) result(ctx context.Context, req list.ListRequest, c *clusterClient, obj O) list.ListResult {
	identity := l.res.identityOf()
	t := identity.targetOf(map[string]types.String{
		"cluster": stringOrNull(c.name), "namespace": types.StringValue(obj.GetNamespace()), "name": types.StringValue(obj.GetName()),
	})
	result, state := identity.listed(ctx, req, t, t.id+" ("+l.about(obj)+")")
	if !req.IncludeResource || result.Diagnostics.HasError() {
		return result
	}
	m, ok := modelOf[M](ctx, state, &result.Diagnostics)
	if !ok {
		return result
	}
	if err := l.res.refresh(ctx, c, &m, obj); err != nil {
		result.Diagnostics.AddError("Reading "+l.res.noun, err.Error())
		return result
	}
	result.Diagnostics.Append(state.Set(ctx, &m)...)
	include(&result, state)
	return result
}

// newTenantList lists the Tenants of a provider cluster.
func newTenantList() list.ListResource {
	r, _ := newTenantResource().(*tenantResource)
	return &objectList[tenantModel, *tenantModel, *authv1beta1.Tenant]{res: &r.objectResource, listKind: listKind[*authv1beta1.Tenant]{
		description: "The Tenants (`authentication.liqo.io/v1beta1`) of a provider cluster, one per consumer, as " +
			"`liqo_tenant` resources: those Terraform made and those liqoctl or the controllers made.",
		newList: func() client.ObjectList { return &authv1beta1.TenantList{} },
		filter: &listFilter[*authv1beta1.Tenant]{name: "consumer_cluster_id",
			description: "Only the Tenant of the consumer cluster of this ID (`spec.clusterID`).",
			value:       func(t *authv1beta1.Tenant) string { return string(t.Spec.ClusterID) }},
		about: func(t *authv1beta1.Tenant) string { return "consumer " + string(t.Spec.ClusterID) },
	}}
}

// newResourceSliceList lists the ResourceSlices of a consumer cluster, without the copies
// replicated to it from the consumers it provides for.
func newResourceSliceList() list.ListResource {
	r, _ := newResourceSliceResource().(*resourceSliceResource)
	providerOf := func(rs *authv1beta1.ResourceSlice) string {
		if rs.Spec.ProviderClusterID == nil {
			return ""
		}
		return string(*rs.Spec.ProviderClusterID)
	}
	return &objectList[resourceSliceModel, *resourceSliceModel, *authv1beta1.ResourceSlice]{res: &r.objectResource,
		listKind: listKind[*authv1beta1.ResourceSlice]{
			description: "The ResourceSlices (`authentication.liqo.io/v1beta1`) of a consumer cluster, its requests for " +
				"resources of its providers, as `liqo_resource_slice` resources: those Terraform made and those liqoctl made. " +
				"The copies that the consumers of this cluster replicated to it (label `liqo.io/replicated`) are theirs, " +
				"not listed.",
			newList: func() client.ObjectList { return &authv1beta1.ResourceSliceList{} },
			manages: func(rs *authv1beta1.ResourceSlice) bool { return rs.Labels[consts.ReplicatedLabel] != "true" },
			filter: &listFilter[*authv1beta1.ResourceSlice]{name: "provider_cluster_id",
				description: "Only the ResourceSlices for the provider cluster of this ID (`spec.providerClusterID`).",
				value:       providerOf},
			about: func(rs *authv1beta1.ResourceSlice) string { return "provider " + providerOf(rs) },
		}}
}

// newNamespaceOffloadingList lists the NamespaceOffloadings of a consumer cluster.
func newNamespaceOffloadingList() list.ListResource {
	r, _ := newNamespaceOffloadingResource().(*namespaceOffloadingResource)
	return &objectList[namespaceOffloadingModel, *namespaceOffloadingModel, *offloadingv1beta1.NamespaceOffloading]{
		res: &r.objectResource, listKind: listKind[*offloadingv1beta1.NamespaceOffloading]{
			description: "The NamespaceOffloadings (`offloading.liqo.io/v1beta1`) of a consumer cluster, one per offloaded " +
				"namespace, as `liqo_namespace_offloading` resources: those Terraform made and those `liqoctl offload " +
				"namespace` made.",
			newList: func() client.ObjectList { return &offloadingv1beta1.NamespaceOffloadingList{} },
			manages: func(o *offloadingv1beta1.NamespaceOffloading) bool { return o.Name == consts.NamespaceOffloadingName },
			about: func(o *offloadingv1beta1.NamespaceOffloading) string {
				if o.Status.OffloadingPhase == "" {
					return fmt.Sprintf("pods %s", o.Spec.PodOffloadingStrategy)
				}
				return fmt.Sprintf("pods %s, %s", o.Spec.PodOffloadingStrategy, o.Status.OffloadingPhase)
			},
		}}
}
