package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"
)

// serve answers GET / with the hostname, /healthz with ok and /bytes?n=N with N bytes on port
// (default 8080), logging each request to stdout.
func serve(port string) error {
	if port == "" {
		port = "8080"
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("reading the hostname: %w", err)
	}
	logger := log.New(os.Stdout, "", log.LstdFlags)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, host)
	})
	mux.HandleFunc("GET /bytes", serveBytes)
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger.Printf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		mux.ServeHTTP(w, r)
	})
	logger.Printf("serving on :%s as %s", port, host)
	srv := &http.Server{Addr: ":" + port, Handler: logged, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// maxBytes bounds what /bytes serves: 1 GiB.
const maxBytes = 1 << 30

// serveBytes answers n (the query's, at most maxBytes) zero bytes.
func serveBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil || n < 0 || n > maxBytes {
		http.Error(w, fmt.Sprintf("n=%q: want a byte count from 0 to %d", r.URL.Query().Get("n"), maxBytes), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	buf := make([]byte, 64<<10)
	for n > 0 {
		k, err := w.Write(buf[:min(n, int64(len(buf)))])
		if err != nil {
			return
		}
		n -= int64(k)
	}
}
