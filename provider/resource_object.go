package provider

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// objectModel is what objectResource needs of a resource's model (on its pointer): where the
// object is, and the `timeouts` block.
type objectModel interface {
	// target is the `cluster` attribute and the key of the object the model stands for.
	target() (cluster types.String, key client.ObjectKey)
	// setID sets the `id` attribute of the object at key in the cluster named cluster.
	setID(cluster string, key client.ObjectKey)
	// timeoutsValue is the `timeouts` block.
	timeoutsValue() timeouts.Value
}

// namespacedObject holds the attributes that name a namespaced object in a cluster; the models
// of the resources that manage one object embed it.
type namespacedObject struct {
	ID        types.String   `tfsdk:"id"`
	Cluster   types.String   `tfsdk:"cluster"`
	Namespace types.String   `tfsdk:"namespace"`
	Name      types.String   `tfsdk:"name"`
	Timeouts  timeouts.Value `tfsdk:"timeouts"`
}

func (o *namespacedObject) target() (types.String, client.ObjectKey) {
	return o.Cluster, client.ObjectKey{Namespace: o.Namespace.ValueString(), Name: o.Name.ValueString()}
}

func (o *namespacedObject) setID(cluster string, key client.ObjectKey) {
	o.ID = types.StringValue(objectID(cluster, key.Namespace, key.Name))
}

func (o *namespacedObject) timeoutsValue() timeouts.Value { return o.Timeouts }

// objectWrite is what a build hook may read: the plan, the prior state (nil on create), the
// configuration (for write-only attributes) and the cluster the object is written to (for what
// the object is made from there).
type objectWrite[M any] struct {
	plan    *M
	state   *M
	config  tfsdk.Config
	cluster *clusterClient
}

// fromPlan adapts a model's method that writes the plan into the object to a build hook.
func fromPlan[M any, O client.Object](apply func(*M, context.Context, O) diag.Diagnostics) func(context.Context, objectWrite[M], O) error {
	return func(ctx context.Context, w objectWrite[M], o O) error { return diagsError(apply(w.plan, ctx, o)) }
}

// intoState adapts a model's method that reads the object into the state to a read hook.
func intoState[M any, O client.Object](read func(*M, context.Context, *clusterClient, O) diag.Diagnostics) func(context.Context, *clusterClient, *M, O) error {
	return func(ctx context.Context, c *clusterClient, m *M, o O) error { return diagsError(read(m, ctx, c, o)) }
}

// objectKind describes one kind of object to objectResource, with the resource's hooks.
type objectKind[M any, O client.Object] struct {
	typeName   string // the resource type's name after the provider's: "_public_key"
	kind       string // the API kind, in messages: "GatewayServer"
	noun       string // in the diagnostics' summaries: "Creating <noun>"
	needLiqo   bool   // the cluster must have our API installed
	namespaced bool   // the import ID is `[cluster/]namespace/name`, else `[cluster/]name`
	// timeout is the default of the `timeouts` block's create, update and delete.
	timeout time.Duration
	// build writes the plan into obj: a new object on create, the current one inside the
	// update's patch.
	build func(ctx context.Context, w objectWrite[M], obj O) error
	// read refreshes the state from the object (Read).
	read func(ctx context.Context, c *clusterClient, state *M, obj O) error
	// written (optional) sets the plan's computed attributes from the object just written or,
	// after a wait, last seen.
	written func(ctx context.Context, c *clusterClient, plan *M, obj O) error
	// kept (optional) tells whether an update kept the computed attributes of the state (the
	// plan knows them): written and wait are then skipped.
	kept func(plan *M) bool
	// wait (optional) waits after create and update (op: "create" or "update", the name of
	// the timeout that bounds it) for what the controllers report; it returns the object last
	// seen (written then records it) or nil.
	wait func(ctx context.Context, c *clusterClient, plan *M, obj O, timeout time.Duration, op string) (O, error)
	// waits (optional, with wait) tells whether the plan asks to wait.
	waits func(plan *M) bool
	// createError (optional) explains a failed create; default createError.
	createError func(c *clusterClient, obj O, err error) string
	// deleted (optional) cleans up after the object is gone.
	deleted func(ctx context.Context, c *clusterClient, state *M, timeout time.Duration) error
	// imported (optional) checks the object an import names.
	imported func(c *clusterClient, obj O) error
	// identity (optional) is the resource identity, when the import ID is not
	// `[cluster/]namespace/name` (namespaced) or `[cluster/]name`.
	identity stateIdentity
}

// identityOf is the resource identity: the parts of the import ID.
func (k *objectKind[M, O]) identityOf() stateIdentity {
	switch {
	case k.identity != nil:
		return k.identity
	case k.namespaced:
		return namedObjectIdentity
	}
	return objectIdentity("name")
}

// objectResource is the create/read/update/delete/import of a resource that manages one
// object in one cluster; the resource embeds it and adds its schema and hooks.
type objectResource[M any, P interface {
	*M
	objectModel
}, O client.Object] struct {
	clusterResource
	objectKind[M, O]
}

// Metadata names the resource type.
func (r *objectResource[M, P, O]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + r.typeName
}

// IdentitySchema describes the resource identity: `cluster` and the parts that name the object.
func (r *objectResource[M, P, O]) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = r.identityOf().schema()
}

// newObject is an empty object of the kind, named by key.
func (r *objectResource[M, P, O]) newObject(key client.ObjectKey) O {
	var zero O
	obj, ok := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(O)
	if !ok {
		panic(fmt.Sprintf("%T is not a pointer to a struct", zero)) // a programming error, caught by every test
	}
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	return obj
}

// connect returns the client of the model's cluster and the object's key; on failure it
// reports the error under summary and ok is false.
func (r *objectResource[M, P, O]) connect(ctx context.Context, m P, summary string, diags *diag.Diagnostics) (*clusterClient, client.ObjectKey, bool) {
	cluster, key := m.target()
	c, err := r.client(ctx, cluster, r.needLiqo)
	if err != nil {
		diags.AddError(summary, err.Error())
		return nil, key, false
	}
	return c, key, true
}

// Create makes the object, saves the state, then waits when the plan asks to.
func (r *objectResource[M, P, O]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer r.identityOf().record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	plan, ok := modelOf[M](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	summary := "Creating " + r.noun
	timeout, d := P(&plan).timeoutsValue().Create(ctx, r.timeout)
	resp.Diagnostics.Append(d...)
	c, key, ok := r.connect(ctx, &plan, summary, &resp.Diagnostics)
	if !ok {
		return
	}
	obj := r.newObject(key)
	if err := r.build(ctx, objectWrite[M]{plan: &plan, config: req.Config, cluster: c}, obj); err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("%s %s: %v", r.kind, objectID("", key.Namespace, key.Name), err))
		return
	}
	if err := c.ctrl.Create(ctx, obj); err != nil {
		explain := createError[O]
		if r.createError != nil {
			explain = r.createError
		}
		resp.Diagnostics.AddError(summary, explain(c, obj, err))
		return
	}
	P(&plan).setID(c.name, key)
	r.settle(ctx, c, plan, obj, timeout, &resp.State, &resp.Diagnostics, "create")
}

// settle records the computed attributes of the object just written by op ("create" or
// "update"), saves the state (before waiting: a timeout leaves the object in the state), then
// waits and saves what it last saw.
func (r *objectResource[M, P, O]) settle(ctx context.Context, c *clusterClient, planned M, obj O, timeout time.Duration,
	state *tfsdk.State, diags *diag.Diagnostics, op string,
) {
	summary := "Creating " + r.noun
	if op == "update" {
		summary = "Updating " + r.noun
	}
	record := func(obj O) bool {
		plan := planned // each record starts from the plan: written fills what it left unknown
		if r.written != nil {
			if err := r.written(ctx, c, &plan, obj); err != nil {
				diags.AddError(summary, err.Error())
				return false
			}
		}
		diags.Append(state.Set(ctx, &plan)...)
		return !diags.HasError()
	}
	if !record(obj) || r.wait == nil || r.waits != nil && !r.waits(&planned) {
		return
	}
	seen, err := r.wait(ctx, c, &planned, obj, timeout, op)
	if !isNil(seen) {
		record(seen)
	}
	if err != nil {
		diags.AddError(summary, err.Error())
	}
}

// isNil tells whether an object pointer is nil.
func isNil[O client.Object](obj O) bool {
	v := reflect.ValueOf(obj)
	return !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil()
}

// Read refreshes the state from the object; an object deleted out of band leaves the state,
// and the next plan creates it again.
func (r *objectResource[M, P, O]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	r.identityOf().record(ctx, &req.State, resp.Identity, &resp.Diagnostics) // Read keeps what names the object
	state, ok := modelOf[M](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	summary := "Reading " + r.noun
	c, key, ok := r.connect(ctx, &state, summary, &resp.Diagnostics)
	if !ok {
		return
	}
	obj := r.newObject(client.ObjectKey{})
	found, err := readObject(ctx, c, r.kind, key, obj)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	if err := r.refresh(ctx, c, &state, obj); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// refresh sets the state from obj, the object it names in the cluster of c: Read's work once it
// has the object, which the list resource shares.
func (r *objectResource[M, P, O]) refresh(ctx context.Context, c *clusterClient, state *M, obj O) error {
	_, key := P(state).target()
	P(state).setID(c.name, key)
	return r.read(ctx, c, state, obj)
}

// Update patches the object in place, then records and waits as Create does, unless the plan
// kept the computed attributes.
func (r *objectResource[M, P, O]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer r.identityOf().record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan, state M
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "Updating " + r.noun
	timeout, d := P(&plan).timeoutsValue().Update(ctx, r.timeout)
	resp.Diagnostics.Append(d...)
	c, key, ok := r.connect(ctx, &plan, summary, &resp.Diagnostics)
	if !ok {
		return
	}
	obj := r.newObject(client.ObjectKey{})
	w := objectWrite[M]{plan: &plan, state: &state, config: req.Config, cluster: c}
	if err := patchObject(ctx, c, r.kind, key, obj, func() error { return r.build(ctx, w, obj) }); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	P(&plan).setID(c.name, key)
	if r.kept != nil && r.kept(&plan) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	r.settle(ctx, c, plan, obj, timeout, &resp.State, &resp.Diagnostics, "update")
}

// Delete removes the object and waits until it is gone.
func (r *objectResource[M, P, O]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := modelOf[M](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	summary := "Deleting " + r.noun
	timeout, d := P(&state).timeoutsValue().Delete(ctx, r.timeout)
	resp.Diagnostics.Append(d...)
	c, key, ok := r.connect(ctx, &state, summary, &resp.Diagnostics)
	if !ok {
		return
	}
	if err := deleteAndWait(ctx, c, r.newObject(key), timeout); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if r.deleted != nil {
		if err := r.deleted(ctx, c, &state, timeout); err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
		}
	}
}

// ImportState takes `[cluster/]namespace/name` (`[cluster/]name` for a cluster-scoped
// object) or the identity, checks that the object exists, and sets the attributes that name it
// and the identity; Read does the rest.
func (r *objectResource[M, P, O]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	summary := "Importing " + r.noun
	t, err := r.identityOf().target(ctx, req, objectIDParts(r.namespaced))
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	c, err := r.client(ctx, t.value("cluster"), r.needLiqo)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	namespace, name := t.value("namespace").ValueString(), t.value("name").ValueString()
	obj := r.newObject(client.ObjectKey{})
	if err := c.ctrl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("reading %s %s in %s: %v", r.kind, objectID("", namespace, name), c.describe(), err))
		return
	}
	if r.imported != nil {
		if err := r.imported(c, obj); err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
	}
	r.identityOf().save(ctx, t, resp)
}

// createError explains a failed create: the object exists (import it), its namespace is
// missing (create it first), or else the API's error.
func createError[O client.Object](c *clusterClient, obj O, err error) string {
	ref := objectID("", obj.GetNamespace(), obj.GetName())
	kind := kindOf(c, obj)
	switch {
	case apierrors.IsAlreadyExists(err):
		return fmt.Sprintf("%s %s already exists in %s: import it with `terraform import <address> %s`, or choose another `name`",
			kind, ref, c.describe(), objectID(c.name, obj.GetNamespace(), obj.GetName()))
	case apierrors.IsNotFound(err) && obj.GetNamespace() != "":
		return fmt.Sprintf("creating %s %s in %s: namespace %s does not exist; create it first (liqo_tenant_namespace) "+
			"and reference its name", kind, ref, c.describe(), obj.GetNamespace())
	case apierrors.IsInvalid(err):
		return fmt.Sprintf("creating %s %s in %s: the API rejected it: %v", kind, ref, c.describe(), err)
	}
	return fmt.Sprintf("creating %s %s in %s: %v", kind, ref, c.describe(), err)
}

// kindOf is the API kind of obj, for messages.
func kindOf(c *clusterClient, obj client.Object) string {
	if gvk, err := c.ctrl.GroupVersionKindFor(obj); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}
