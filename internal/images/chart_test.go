package images_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

const root = "../.."

// TestChartImages: the images built are the ones the chart runs by default, at the version of
// internal/version, and the GNUmakefile builds the binaries of the components, which are commands
// of this module.
func TestChartImages(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "liqo", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image          string `json:"image"`
		GatewayImage   string `json:"gatewayImage"`
		VirtualKubelet struct {
			Image string `json:"image"`
		} `json:"virtualKubelet"`
		Proxy struct {
			Image string `json:"image"`
		} `json:"proxy"`
		Fabric struct {
			Image string `json:"image"`
		} `json:"fabric"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	chart := map[string]string{
		"image":                values.Image,
		"gatewayImage":         values.GatewayImage,
		"virtualKubelet.image": values.VirtualKubelet.Image,
		"proxy.image":          values.Proxy.Image,
		"fabric.image":         values.Fabric.Image,
	}
	want := map[string]string{
		"image":                version.ControllerManagerImage,
		"gatewayImage":         version.GatewayImage,
		"virtualKubelet.image": version.VirtualKubeletImage,
		"proxy.image":          version.ProxyImage,
		"fabric.image":         version.FabricImage,
	}
	for k, v := range want {
		if chart[k] != v {
			t.Errorf("deploy/liqo/values.yaml %s = %q, want %q (internal/version)", k, chart[k], v)
		}
	}

	built := map[string]bool{}
	for _, c := range images.Components {
		built[c.Reference(version.Registry)] = true
	}
	for k, v := range want {
		if !built[v] {
			t.Errorf("the chart's %s %s is not among the images built", k, v)
		}
	}
	if len(images.Components) != len(want) {
		t.Errorf("%d components, the chart runs %d images", len(images.Components), len(want))
	}

	makefile, err := os.ReadFile(filepath.Join(root, "GNUmakefile"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range images.Components {
		names = append(names, c.Name)
		if _, err := os.Stat(filepath.Join(root, "cmd", c.Name, "main.go")); err != nil {
			t.Errorf("component %s has no command: %v", c.Name, err)
		}
	}
	var listed []string
	for _, line := range strings.Split(string(makefile), "\n") {
		if v, ok := strings.CutPrefix(line, "IMAGE_COMPONENTS"); ok {
			_, v, _ = strings.Cut(v, "=")
			listed = strings.Fields(v)
		}
	}
	if strings.Join(listed, " ") != strings.Join(names, " ") {
		t.Errorf("the GNUmakefile's IMAGE_COMPONENTS are %q, want %q (images.Components)", listed, names)
	}
}
