package objects

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Policy says which local objects of a kind are reflected (upstream Liqo's ReflectionType).
// Whatever the policy, an object annotated consts.SkipReflectionAnnotation is not reflected.
type Policy string

const (
	// DenyList reflects every object but those opted out with consts.SkipReflectionAnnotation.
	// The default.
	DenyList Policy = "DenyList"
	// AllowList reflects only the objects opted in with consts.AllowReflectionAnnotation.
	AllowList Policy = "AllowList"
)

// Kinds whose policy can be chosen, by upstream's resource names (its virtual kubelet's
// --<resource>-reflection-type flags). EndpointSlices follow their Service.
const (
	ResourceConfigMap = "configmap"
	ResourceSecret    = "secret"
	ResourceService   = "service"
	ResourceIngress   = "ingress"
)

// PolicyResources are the kinds whose policy can be chosen.
var PolicyResources = []string{ResourceConfigMap, ResourceSecret, ResourceService, ResourceIngress}

// Policies are the policies of the kinds, by PolicyResources name; a kind not in it is DenyList.
type Policies map[string]Policy

// Of returns a kind's policy.
func (p Policies) Of(resource string) Policy {
	if v, ok := p[resource]; ok && v != "" {
		return v
	}
	return DenyList
}

// Validate checks every policy and kind.
func (p Policies) Validate() error {
	for res, v := range p {
		if !slices.Contains(PolicyResources, res) {
			return fmt.Errorf("reflection policy for %q: no such kind; the kinds are %s", res, strings.Join(PolicyResources, ", "))
		}
		if _, err := ParsePolicy(string(v)); err != nil {
			return fmt.Errorf("reflection policy of %s: %w", res, err)
		}
	}
	return nil
}

// ParsePolicy reads a policy ("" is DenyList); its error says what is accepted.
func ParsePolicy(s string) (Policy, error) {
	switch {
	case s == "" || strings.EqualFold(s, string(DenyList)):
		return DenyList, nil
	case strings.EqualFold(s, string(AllowList)):
		return AllowList, nil
	}
	return "", fmt.Errorf("%q is not a reflection policy: use %s (reflect all but objects annotated %s) or %s (reflect only objects annotated %s)",
		s, DenyList, consts.SkipReflectionAnnotation, AllowList, consts.AllowReflectionAnnotation)
}

// marked says whether obj carries the annotation key with any value but "false" (upstream's
// reading of both opt annotations).
func marked(obj metav1.Object, key string) bool {
	v, ok := obj.GetAnnotations()[key]
	return ok && !strings.EqualFold(v, "false")
}

// optedOut says whether obj is opted out of reflection, whatever the policy.
func optedOut(obj metav1.Object) bool { return marked(obj, consts.SkipReflectionAnnotation) }

// reason says why the policy keeps obj from being reflected, or "".
func (p Policy) reason(obj metav1.Object) string {
	switch {
	case optedOut(obj):
		return "opted out with " + consts.SkipReflectionAnnotation
	case p == AllowList && !marked(obj, consts.AllowReflectionAnnotation):
		return "the AllowList policy reflects only objects annotated " + consts.AllowReflectionAnnotation
	}
	return ""
}
