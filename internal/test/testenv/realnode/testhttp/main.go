// Command testhttp is the real-node test bed's test image (liqo-test-http). Without arguments
// it serves HTTP on :8080 (PORT overrides): GET / answers the pod's hostname, /healthz answers
// ok, /bytes?n=N answers N zero bytes, and each request is logged to stdout. `testhttp get URL` prints what GET URL answers;
// `testhttp apiserver` prints the API server's /version, reached as the pod's ServiceAccount
// through the in-cluster configuration (KUBERNETES_SERVICE_HOST/PORT, the projected token and
// CA); `testhttp bench N URL [keepalive]` sends N sequential GETs, each on a new connection (or
// all on one), and prints their latency percentiles; `testhttp rate URL` prints how fast GET URL
// answers its body (with /bytes?n=N, the server's N bytes). Each fails with a non-zero exit
// status when the request does.
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 1:
		err = serve(os.Getenv("PORT"))
	case len(os.Args) == 3 && os.Args[1] == "get":
		err = get(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "bench":
		err = bench(os.Args[2], os.Args[3], false)
	case len(os.Args) == 5 && os.Args[1] == "bench" && os.Args[4] == "keepalive":
		err = bench(os.Args[2], os.Args[3], true)
	case len(os.Args) == 3 && os.Args[1] == "rate":
		err = rate(os.Args[2])
	case len(os.Args) == 2 && os.Args[1] == "apiserver":
		err = apiserverVersion()
	default:
		err = fmt.Errorf("usage: %s [get URL | bench N URL [keepalive] | rate URL | apiserver]", os.Args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhttp:", err)
		os.Exit(1)
	}
}
