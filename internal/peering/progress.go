package peering

import "context"

// waitReporterKey keys the context value of WithWaitReporter.
type waitReporterKey struct{}

// WithWaitReporter returns a context whose waits (in Peer and Unpeer) call report with what
// they wait for (e.g. "GatewayServer liqo-tenant-a/a on b to report its endpoint") as they
// begin, and with "" as they end: for a caller to tell others what its operation waits for.
func WithWaitReporter(ctx context.Context, report func(what string)) context.Context {
	return context.WithValue(ctx, waitReporterKey{}, report)
}

// ReportWait tells ctx's reporter (WithWaitReporter), if any, that a wait for what begins; the
// function it returns tells it that the wait ended. The package's own waits call it.
func ReportWait(ctx context.Context, what string) func() {
	report, ok := ctx.Value(waitReporterKey{}).(func(string))
	if !ok {
		return func() {}
	}
	report(what)
	return func() { report("") }
}
