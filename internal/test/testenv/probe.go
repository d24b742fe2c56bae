package testenv

import (
	"context"
	"net/http"
)

// ProbeOK reports whether http://<addr><path> (a health or readiness probe of a process under
// test) answers 200 OK; an address that is not listening yet reports false.
func ProbeOK(ctx context.Context, addr, path string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
