package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// connectionModel is how to reach one cluster: the provider block's own connection, or one
// entry of its clusters map. The attributes are those of the hashicorp/kubernetes provider.
type connectionModel struct {
	Kubeconfig            types.String `tfsdk:"kubeconfig"`
	ConfigPath            types.String `tfsdk:"config_path"`
	ConfigContext         types.String `tfsdk:"config_context"`
	ConfigContextAuthInfo types.String `tfsdk:"config_context_auth_info"`
	ConfigContextCluster  types.String `tfsdk:"config_context_cluster"`
	Host                  types.String `tfsdk:"host"`
	Token                 types.String `tfsdk:"token"`
	ClientCertificate     types.String `tfsdk:"client_certificate"`
	ClientKey             types.String `tfsdk:"client_key"`
	ClusterCACertificate  types.String `tfsdk:"cluster_ca_certificate"`
	Insecure              types.Bool   `tfsdk:"insecure"`
	ProxyURL              types.String `tfsdk:"proxy_url"`
	Exec                  *execModel   `tfsdk:"exec"`
	LiqoNamespace         types.String `tfsdk:"liqo_namespace"`
}

// execModel runs a credential plugin, as kubeconfig's exec section does.
type execModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Command    types.String `tfsdk:"command"`
	Args       types.List   `tfsdk:"args"`
	Env        types.Map    `tfsdk:"env"`
}

// connectionAttributes returns the schema of a connection, for the provider block and for each
// entry of clusters.
func connectionAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"kubeconfig": schema.StringAttribute{
			Optional: true, Sensitive: true,
			MarkdownDescription: "Content of a kubeconfig file, for runs where no file exists (Terraform Cloud). Conflicts with `config_path`.",
		},
		"config_path": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Path of a kubeconfig file. Conflicts with `kubeconfig`.",
		},
		"config_context": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Context of the kubeconfig to use; default: its current context.",
		},
		"config_context_auth_info": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "User of the kubeconfig to use instead of the context's.",
		},
		"config_context_cluster": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Cluster of the kubeconfig to use instead of the context's.",
		},
		"host": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "URL of the API server, e.g. `https://10.0.0.1:6443`. Overrides the kubeconfig's.",
		},
		"token": schema.StringAttribute{
			Optional: true, Sensitive: true,
			MarkdownDescription: "Bearer token. Conflicts with `client_certificate`, `client_key` and `exec`.",
		},
		"client_certificate": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "PEM client certificate; needs `client_key`.",
		},
		"client_key": schema.StringAttribute{
			Optional: true, Sensitive: true,
			MarkdownDescription: "PEM private key of `client_certificate`.",
		},
		"cluster_ca_certificate": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "PEM CA certificate that signed the API server's certificate. Conflicts with `insecure`.",
		},
		"insecure": schema.BoolAttribute{
			Optional:            true,
			MarkdownDescription: "Skip verifying the API server's certificate. TLS verification is on unless this is `true`.",
		},
		"proxy_url": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "URL of the proxy to reach the API server through.",
		},
		"liqo_namespace": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Namespace Liqo is installed in on this cluster (liqoctl's `--namespace`, the controller " +
				"manager's `--liqo-namespace`): where its cluster ID ConfigMap and its Networks are. Default `liqo`; in the " +
				"provider block, the default of every `clusters` entry that sets none.",
			Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelPattern,
				"must be a DNS label (a namespace name)")},
		},
		"exec": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "A credential plugin to run for a token, as in kubeconfig's `exec`. Conflicts with `token`.",
			Attributes: map[string]schema.Attribute{
				"api_version": schema.StringAttribute{Required: true, MarkdownDescription: "API version of the plugin's ExecCredential, e.g. `client.authentication.k8s.io/v1`."},
				"command":     schema.StringAttribute{Required: true, MarkdownDescription: "Command to run."},
				"args":        schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Its arguments."},
				"env":         schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Its environment variables."},
			},
		},
	}
}

// set reports whether a string attribute has a non-empty known value.
func set(v types.String) bool { return !v.IsNull() && !v.IsUnknown() && v.ValueString() != "" }

// unknown reports whether any attribute of the connection is not known yet (a cluster created
// in the same apply): such a connection is usable only at apply time.
func (c *connectionModel) unknown() bool {
	for _, v := range []attr.Value{c.Kubeconfig, c.ConfigPath, c.ConfigContext, c.ConfigContextAuthInfo, c.ConfigContextCluster,
		c.Host, c.Token, c.ClientCertificate, c.ClientKey, c.ClusterCACertificate, c.Insecure, c.ProxyURL, c.LiqoNamespace} {
		if v.IsUnknown() {
			return true
		}
	}
	if c.Exec != nil {
		for _, v := range []attr.Value{c.Exec.APIVersion, c.Exec.Command, c.Exec.Args, c.Exec.Env} {
			if v.IsUnknown() {
				return true
			}
		}
	}
	return false
}

// empty reports whether nothing at all is set of how to reach the cluster (liqo_namespace says
// what is there, not how to reach it).
func (c *connectionModel) empty() bool {
	return !set(c.Kubeconfig) && !set(c.ConfigPath) && !set(c.Host) && !set(c.Token) && !set(c.ClientCertificate) &&
		!set(c.ClientKey) && !set(c.ClusterCACertificate) && c.Exec == nil && !set(c.ConfigContext) &&
		!set(c.ConfigContextAuthInfo) && !set(c.ConfigContextCluster) && !set(c.ProxyURL) &&
		(c.Insecure.IsNull() || c.Insecure.IsUnknown())
}

// conflicts lists the contradictions among the connection's known attributes, each naming the
// attributes and the fix.
func (c *connectionModel) conflicts() []string {
	var out []string
	if set(c.Kubeconfig) && set(c.ConfigPath) {
		out = append(out, "`kubeconfig` and `config_path` both give a kubeconfig: set one of them")
	}
	if (set(c.ConfigContext) || set(c.ConfigContextAuthInfo) || set(c.ConfigContextCluster)) && !set(c.Kubeconfig) && !set(c.ConfigPath) {
		out = append(out, "`config_context*` select from a kubeconfig: set `config_path` or `kubeconfig` too")
	}
	out = append(out, c.credentialConflicts()...)
	if !c.Insecure.IsNull() && !c.Insecure.IsUnknown() && c.Insecure.ValueBool() && set(c.ClusterCACertificate) {
		out = append(out, "`insecure = true` skips the verification that `cluster_ca_certificate` is for: remove one of them")
	}
	if set(c.Host) && !isURL(c.Host.ValueString()) {
		out = append(out, fmt.Sprintf("`host` %q is not a URL like https://10.0.0.1:6443", c.Host.ValueString()))
	}
	if set(c.ProxyURL) && !isURL(c.ProxyURL.ValueString()) {
		out = append(out, fmt.Sprintf("`proxy_url` %q is not a URL like http://proxy:3128", c.ProxyURL.ValueString()))
	}
	return out
}

// credentialConflicts lists the contradictions among the connection's credentials: two given,
// or half of a client certificate.
func (c *connectionModel) credentialConflicts() []string {
	var out []string
	certificate := set(c.ClientCertificate) || set(c.ClientKey)
	if set(c.Token) && certificate {
		out = append(out, "`token` and `client_certificate`/`client_key` are two credentials: set one of them")
	}
	if set(c.Token) && c.Exec != nil {
		out = append(out, "`token` and `exec` are two credentials: set one of them")
	}
	if c.Exec != nil && certificate {
		out = append(out, "`exec` and `client_certificate`/`client_key` are two credentials: set one of them")
	}
	if set(c.ClientCertificate) != set(c.ClientKey) && !c.ClientCertificate.IsUnknown() && !c.ClientKey.IsUnknown() {
		out = append(out, "`client_certificate` and `client_key` go together: set both")
	}
	return out
}

// isURL reports whether s parses as a URL with a scheme and a host.
func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// errNoConnection is returned for a connection with nothing set.
var errNoConnection = errors.New("no connection attributes set")

// restConfig builds the client configuration: the kubeconfig (file or content) when given, with
// the explicit attributes overriding it. It never falls back to in-cluster or localhost.
func (c *connectionModel) restConfig() (*rest.Config, error) {
	if c.empty() {
		return nil, errNoConnection
	}
	cfg := &rest.Config{}
	if set(c.Kubeconfig) || set(c.ConfigPath) {
		var raw *clientcmdapi.Config
		var err error
		if set(c.Kubeconfig) {
			raw, err = clientcmd.Load([]byte(c.Kubeconfig.ValueString()))
			if err != nil {
				return nil, fmt.Errorf("parsing `kubeconfig`: %w", err)
			}
		} else {
			path := c.ConfigPath.ValueString()
			if strings.HasPrefix(path, "~/") {
				home, _ := os.UserHomeDir()
				path = home + path[1:]
			}
			raw, err = clientcmd.LoadFromFile(path)
			if err != nil {
				return nil, fmt.Errorf("reading `config_path` %s: %w", path, err)
			}
		}
		overrides := &clientcmd.ConfigOverrides{
			CurrentContext: c.ConfigContext.ValueString(),
			Context:        clientcmdapi.Context{AuthInfo: c.ConfigContextAuthInfo.ValueString(), Cluster: c.ConfigContextCluster.ValueString()},
		}
		cfg, err = clientcmd.NewNonInteractiveClientConfig(*raw, overrides.CurrentContext, overrides, nil).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("using the kubeconfig (context %q): %w", c.ConfigContext.ValueString(), err)
		}
	}
	if set(c.Host) {
		cfg.Host = c.Host.ValueString()
	}
	if set(c.Token) {
		cfg.BearerToken, cfg.BearerTokenFile = c.Token.ValueString(), ""
		cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	}
	if set(c.ClientCertificate) {
		cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = []byte(c.ClientCertificate.ValueString()), []byte(c.ClientKey.ValueString()), "", ""
		cfg.BearerToken, cfg.BearerTokenFile = "", ""
	}
	if set(c.ClusterCACertificate) {
		cfg.CAData, cfg.CAFile = []byte(c.ClusterCACertificate.ValueString()), ""
	}
	if !c.Insecure.IsNull() && c.Insecure.ValueBool() {
		cfg.Insecure, cfg.CAData, cfg.CAFile = true, nil, ""
	}
	if set(c.ProxyURL) {
		u, err := url.Parse(c.ProxyURL.ValueString())
		if err != nil {
			return nil, fmt.Errorf("parsing `proxy_url`: %w", err)
		}
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return u, nil }
	}
	if c.Exec != nil {
		exec := &clientcmdapi.ExecConfig{
			APIVersion: c.Exec.APIVersion.ValueString(), Command: c.Exec.Command.ValueString(),
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		for _, a := range c.Exec.Args.Elements() {
			if s, ok := a.(types.String); ok {
				exec.Args = append(exec.Args, s.ValueString())
			}
		}
		for k, v := range c.Exec.Env.Elements() {
			if s, ok := v.(types.String); ok {
				exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: s.ValueString()})
			}
		}
		cfg.ExecProvider, cfg.BearerToken = exec, ""
	}
	if cfg.Host == "" {
		return nil, errors.New("no API server: set `host`, or `config_path`/`kubeconfig` with a cluster server")
	}
	return cfg, nil
}
