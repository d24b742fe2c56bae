package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// MetricSample is one sample of a metric an API server exposes: its labels and value.
type MetricSample struct {
	// Labels are the sample's label names and values.
	Labels map[string]string
	// Value is the sample's value.
	Value float64
}

// APIServerMetric reads the samples of the metric name from the API server kube talks to
// (its /metrics endpoint, in the text format).
func APIServerMetric(ctx context.Context, kube kubernetes.Interface, name string) ([]MetricSample, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	var out []MetricSample
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		s := MetricSample{Labels: map[string]string{}}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			s.Labels[k] = strings.Trim(v, `"`)
		}
		if s.Value, err = strconv.ParseFloat(value, 64); err != nil {
			return nil, fmt.Errorf("metric %s: sample %q: %w", name, line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// OpenWatches is how many watches of resource (plural, e.g. "resourceslices") the API server
// kube talks to serves now (apiserver_longrunning_requests).
func OpenWatches(ctx context.Context, kube kubernetes.Interface, resource string) (int, error) {
	samples, err := APIServerMetric(ctx, kube, "apiserver_longrunning_requests")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range samples {
		if s.Labels["verb"] == "WATCH" && s.Labels["resource"] == resource {
			n += int(s.Value)
		}
	}
	return n, nil
}
