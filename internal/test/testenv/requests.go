package testenv

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// RequestCounts are the requests an API server has served so far, by "VERB resource[/subresource]"
// (its apiserver_request_total metric; watches, which stay open, and non-resource requests left out).
type RequestCounts map[string]float64

// APIRequests reads the request counters of the API server kube talks to.
func APIRequests(ctx context.Context, kube kubernetes.Interface) (RequestCounts, error) {
	samples, err := APIServerMetric(ctx, kube, "apiserver_request_total")
	if err != nil {
		return nil, err
	}
	out := RequestCounts{}
	for _, s := range samples {
		verb, resource := s.Labels["verb"], s.Labels["resource"]
		if verb == "WATCH" || resource == "" {
			continue
		}
		if sub := s.Labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		out[verb+" "+resource] += s.Value
	}
	return out, nil
}

// Since is what was served after before, by key.
func (c RequestCounts) Since(before RequestCounts) RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Without leaves out the keys whose resource is one of resources (e.g. "leases": the components'
// heartbeats, which run whatever the test does).
func (c RequestCounts) Without(resources ...string) RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		_, res, _ := strings.Cut(k, " ")
		res, _, _ = strings.Cut(res, "/")
		if !slices.Contains(resources, res) {
			out[k] = v
		}
	}
	return out
}

// Total is the sum of every count.
func (c RequestCounts) Total() float64 {
	total := 0.0
	for _, v := range c {
		total += v
	}
	return total
}

// Per formats the counts divided by n (per pod, per peering), most first, leaving out those
// under 0.05 each.
func (c RequestCounts) Per(n int) string {
	type entry struct {
		key string
		n   float64
	}
	var entries []entry
	total := 0.0
	for k, v := range c {
		if d := v / float64(n); d >= 0.05 {
			entries = append(entries, entry{k, d})
			total += d
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return int((b.n - a.n) * 1000) })
	parts := []string{fmt.Sprintf("%.1f in all", total)}
	for _, e := range entries {
		parts = append(parts, fmt.Sprintf("%s %.2f", e.key, e.n))
	}
	return strings.Join(parts, ", ")
}
