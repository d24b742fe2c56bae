package shadowpod

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// secretNames lists the Secrets a pod spec makes readable to whoever runs it (volumes,
// projected volumes, environment, image pull credentials), sorted and without duplicates.
func secretNames(spec *corev1.PodSpec) []string {
	set := map[string]struct{}{}
	add := func(name string) {
		if name != "" {
			set[name] = struct{}{}
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			add(v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name)
				}
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
	}
	for _, e := range spec.EphemeralContainers {
		for _, env := range e.Env {
			if env.ValueFrom != nil && env.ValueFrom.SecretKeyRef != nil {
				add(env.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, s := range spec.ImagePullSecrets {
		add(s.Name)
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// foreignSecret returns the first Secret the ShadowPod's pod refers to that is not a copy the
// ShadowPod's own consumer reflected (a Secret of the provider, or of another consumer), and
// whether one of them does not exist yet (its reflection may still be on its way). A consumer
// may write Secrets in its remote namespaces but never read them: a pod mounting one that is
// not its own would read it for the consumer (logs, exec).
func (r *Reconciler) foreignSecret(ctx context.Context, sp *offv1beta1.ShadowPod) (foreign string, missing string, err error) {
	origin := consts.ReflectionOrigin(sp.Labels)
	for _, name := range secretNames(&sp.Spec.Pod) {
		// Metadata only: the labels say whose copy it is; the content is none of our business.
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: sp.Namespace, Name: name}, meta); err != nil {
			if apierrors.IsNotFound(err) {
				if missing == "" {
					missing = name
				}
				continue
			}
			return "", "", fmt.Errorf("reading Secret %s/%s that ShadowPod %s refers to: %w", sp.Namespace, name, sp.Name, err)
		}
		if origin == "" || consts.ReflectionOrigin(meta.GetLabels()) != origin {
			return name, missing, nil
		}
	}
	return "", missing, nil
}
