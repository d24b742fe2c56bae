package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// Default templates: what a GatewayServer's spec.serverTemplateRef and a GatewayClient's
// spec.clientTemplateRef name by default (upstream Liqo installs templates of these names).
const (
	// ServerTemplateKind is the kind of the default server template.
	ServerTemplateKind = "WgGatewayServerTemplate"
	// ServerTemplateName is the name of the default server template, in Liqo's namespace.
	ServerTemplateName = "wireguard-server"
	// ClientTemplateKind is the kind of the default client template.
	ClientTemplateKind = "WgGatewayClientTemplate"
	// ClientTemplateName is the name of the default client template, in Liqo's namespace.
	ClientTemplateName = "wireguard-client"
)

// ErrTemplateNotFound is returned (wrapped, with the reference) when a template reference names
// an object that does not exist, or a kind the cluster does not serve.
var ErrTemplateNotFound = errors.New("gateway template not found")

// TemplateData is what the Go templates in a template's string values see, as upstream Liqo's
// templates do: {{ .Name }}, {{ .Namespace }}, {{ .GatewayUID }}, {{ .ClusterID }} (the remote
// cluster), {{ .SecretName }} (the key Secret) and {{ .Spec }} (the GatewayServer's or
// GatewayClient's spec, e.g. {{ .Spec.Endpoint.Port }}).
type TemplateData struct {
	Name, Namespace, GatewayUID, ClusterID, SecretName string
	Spec                                               any
}

// Base is the part of a template the controllers start from; see Load.
type Base struct {
	// DeploymentMeta holds the labels and annotations of the Deployment.
	DeploymentMeta metav1.ObjectMeta
	// Deployment is the Deployment's spec.
	Deployment appsv1.DeploymentSpec
	// ServiceMeta holds the labels and annotations of the Service (servers only).
	ServiceMeta metav1.ObjectMeta
	// Service is the Service's spec (servers only).
	Service corev1.ServiceSpec
	// From names the template, for messages; empty for the built-in one.
	From string
}

// Load reads the template ref names (defaultNamespace when the reference has none; API version
// networking.liqo.io/v1beta1 when it has none) as an unstructured object, whatever its kind, and
// renders its base:
//
//   - spec.template.spec.deployment.metadata (labels, annotations) and .spec (a DeploymentSpec);
//   - spec.template.spec.service.metadata and .spec (a ServiceSpec), for servers;
//
// the layout of upstream Liqo's WgGatewayServerTemplate and WgGatewayClientTemplate. Every string
// value is a Go template rendered with data; a rendered value in a numeric or boolean field (or
// an all-digits one in an int-or-string field such as targetPort) becomes a number or boolean.
// Fields the Kubernetes types do not have are an error. Everything else in the template (spec.
// objectKind, spec.template.metadata, spec.template.spec's other fields) is ignored.
//
// An empty reference (no name) is the built-in template: an empty base. A reference to an object
// that does not exist, or to a kind the cluster does not serve, is ErrTemplateNotFound.
func Load(ctx context.Context, c client.Reader, ref corev1.ObjectReference, defaultNamespace string, data TemplateData) (*Base, error) {
	if ref.Name == "" {
		return &Base{}, nil
	}
	if ref.Kind == "" {
		return nil, fmt.Errorf("template reference to %q has no kind: set its kind (e.g. %s or %s) or clear the reference to use the built-in template",
			ref.Name, ServerTemplateKind, ClientTemplateKind)
	}
	gv := netv1beta1.GroupVersion
	if ref.APIVersion != "" {
		var err error
		if gv, err = schema.ParseGroupVersion(ref.APIVersion); err != nil {
			return nil, fmt.Errorf("template reference %s %s: apiVersion %q: %w", ref.Kind, ref.Name, ref.APIVersion, err)
		}
	}
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	where := fmt.Sprintf("%s %s/%s (%s)", ref.Kind, ns, ref.Name, gv)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("%w: %s: %w; create it, or point the reference at an existing template", ErrTemplateNotFound, where, err)
		}
		return nil, fmt.Errorf("reading template %s: %w", where, err)
	}
	b := &Base{From: where}
	parts := []struct {
		path       []string
		meta, spec any
	}{
		{[]string{"spec", "template", "spec", "deployment"}, &b.DeploymentMeta, &b.Deployment},
		{[]string{"spec", "template", "spec", "service"}, &b.ServiceMeta, &b.Service},
	}
	for _, p := range parts {
		obj, found, err := unstructured.NestedMap(u.Object, p.path...)
		if err != nil {
			return nil, fmt.Errorf("template %s: %s: %w", where, strings.Join(p.path, "."), err)
		}
		if !found {
			continue
		}
		for _, f := range []struct {
			key string
			dst any
		}{{"metadata", p.meta}, {"spec", p.spec}} {
			v, ok := obj[f.key]
			if !ok || v == nil {
				continue
			}
			field := strings.Join(append(append([]string(nil), p.path...), f.key), ".")
			if err := decode(v, data, f.dst); err != nil {
				return nil, fmt.Errorf("template %s, field %s: %w; fix the template", where, field, err)
			}
		}
	}
	return b, nil
}

// decode renders the string values of v with data, converts them to the types of dst's fields
// and decodes the result into dst, strictly.
func decode(v any, data TemplateData, dst any) error {
	rendered, err := render(v, data)
	if err != nil {
		return err
	}
	m, ok := coerce(rendered, reflect.TypeOf(dst)).(map[string]any)
	if !ok {
		return fmt.Errorf("want an object, got %T", rendered)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

// render executes every string in v that holds a Go template.
func render(v any, data TemplateData) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "{{") {
			return x, nil
		}
		t, err := template.New("value").Option("missingkey=error").Parse(x)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", x, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return nil, fmt.Errorf("rendering %q: %w", x, err)
		}
		return buf.String(), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := render(e, data)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := render(e, data)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}

var (
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// coerce converts the strings in v that stand where t has a number or a boolean (rendered
// templates are strings) to that type; anything it cannot convert is left for the decoder to
// reject.
func coerce(v any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := v.(string); ok {
		switch {
		case t == intOrStringType:
			if n, err := strconv.ParseInt(s, 10, 32); err == nil {
				return n
			}
		case reflect.PointerTo(t).Implements(unmarshalerType):
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
				return n
			}
		case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
			if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
				return int64(n) //nolint:gosec // the decoder range-checks
			}
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
				return f
			}
		case t.Kind() == reflect.Bool:
			if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
				return b
			}
		}
		return v
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = e
		}
		coerceFields(out, t)
		return out
	case reflect.Slice:
		s, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(s))
		for i, e := range s {
			out[i] = coerce(e, t.Elem())
		}
		return out
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = coerce(e, t.Elem())
		}
		return out
	default:
		return v
	}
}

// coerceFields coerces the values of m, in place, to the fields of struct type t (inline
// embedded structs included).
func coerceFields(m map[string]any, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				coerceFields(m, ft)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if e, ok := m[name]; ok {
			m[name] = coerce(e, f.Type)
		}
	}
}

// DefaultTemplateRef tells whether ref names the default template of its kind (see the
// constants) in liqoNS, the namespace Liqo is installed in; the controllers create those when
// they are missing.
func DefaultTemplateRef(ref corev1.ObjectReference, liqoNS string) bool {
	gvOK := ref.APIVersion == "" || ref.APIVersion == netv1beta1.GroupVersion.String()
	return gvOK && ref.Namespace == liqoNS &&
		(ref.Kind == ServerTemplateKind && ref.Name == ServerTemplateName || ref.Kind == ClientTemplateKind && ref.Name == ClientTemplateName)
}

// DefaultTemplateRefs are the references to the default server and client templates, in
// liqoNS, the namespace Liqo is installed in.
func DefaultTemplateRefs(liqoNS string) []corev1.ObjectReference {
	gv := netv1beta1.GroupVersion.String()
	return []corev1.ObjectReference{
		{APIVersion: gv, Kind: ServerTemplateKind, Namespace: liqoNS, Name: ServerTemplateName},
		{APIVersion: gv, Kind: ClientTemplateKind, Namespace: liqoNS, Name: ClientTemplateName},
	}
}

// EnsureDefaultTemplates creates the default server and client templates when missing, as
// upstream Liqo's chart installs them: upstream liqoctl checks that they exist before it asks for
// a gateway.
func EnsureDefaultTemplates(ctx context.Context, c client.Client, liqoNS string) error {
	for _, ref := range DefaultTemplateRefs(liqoNS) {
		if err := EnsureDefaultTemplate(ctx, c, ref); err != nil {
			return err
		}
	}
	return nil
}

// EnsureDefaultTemplate creates the default template ref names (DefaultTemplateRef) when it is
// missing: a template with only the gateway container, which leaves everything to the
// controllers (image, arguments, capabilities, ports). It never changes an existing one, so that
// an administrator may edit it (e.g. resources, node selector, tolerations) for every gateway.
func EnsureDefaultTemplate(ctx context.Context, c client.Client, ref corev1.ObjectReference) error {
	tmpl := map[string]any{
		"metadata": map[string]any{"name": "{{ .Name }}", "namespace": "{{ .Namespace }}"},
		"spec": map[string]any{
			"deployment": map[string]any{
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": ContainerName}},
				}}},
			},
		},
	}
	objectKind := "WgGatewayClient"
	if ref.Kind == ServerTemplateKind {
		objectKind = "WgGatewayServer"
		tmpl["spec"].(map[string]any)["service"] = map[string]any{"spec": map[string]any{}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"objectKind": map[string]any{"apiVersion": netv1beta1.GroupVersion.String(), "kind": objectKind},
			"template":   tmpl,
		},
	}}
	u.SetGroupVersionKind(netv1beta1.GroupVersion.WithKind(ref.Kind))
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "liqo-controller-manager"})
	if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default template %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return nil
}
