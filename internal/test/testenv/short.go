package testenv

import "testing"

// RequireLong skips tb under `go test -short` (`make test-unit`): what calls it starts real
// processes (API servers, helm, terraform, liqoctl, network namespaces) or builds binaries,
// which only `make test` runs. what says which.
func RequireLong(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: %s (make test runs it)", what)
	}
}
