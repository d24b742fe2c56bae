package workload

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestDecode checks the rendering of templated values and their conversion to the fields' types,
// and that mistakes are errors naming the problem.
func TestDecode(t *testing.T) {
	data := TemplateData{Name: "gw", Namespace: "ns", ClusterID: "peer", SecretName: "keys", Spec: struct{ Port int32 }{51840}}
	var spec appsv1.DeploymentSpec
	in := map[string]any{
		"replicas": "{{ .Spec.Port }}",
		"paused":   "{{ if .Name }}true{{ end }}",
		"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "x", "env": []any{map[string]any{"name": "P", "value": "{{ .Spec.Port }}"}},
				"ports": []any{map[string]any{"containerPort": "{{ .Spec.Port }}"}}}},
		}},
	}
	if err := decode(in, data, &spec); err != nil {
		t.Fatal(err)
	}
	c := spec.Template.Spec.Containers[0]
	if *spec.Replicas != 51840 || !spec.Paused || c.Env[0].Value != "51840" || c.Ports[0].ContainerPort != 51840 {
		t.Errorf("decoded %+v", spec)
	}

	var svc corev1.ServiceSpec
	if err := decode(map[string]any{"ports": []any{map[string]any{"port": 80, "targetPort": "{{ 8080 }}"}, map[string]any{"port": 81, "targetPort": "http"}}}, data, &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Ports[0].TargetPort.IntValue() != 8080 || svc.Ports[1].TargetPort.StrVal != "http" {
		t.Errorf("target ports %+v", svc.Ports)
	}

	for in, want := range map[string]string{
		`{{ .Nope }}`:     "can't evaluate field Nope",
		`{{ .Name `:       "parsing",
		`not-a-number`:    "replicas",
		`{{ .Spec.Pod }}`: "Pod",
	} {
		err := decode(map[string]any{"replicas": in}, data, &spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one mentioning %q", in, err, want)
		}
	}
	if err := decode(map[string]any{"replicaz": 1}, data, &spec); err == nil || !strings.Contains(err.Error(), "replicaz") {
		t.Errorf("unknown field: error %v", err)
	}
}
