package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

// serve answers GET / with the hostname and /healthz with ok on port (default 8080), logging
// each request to stdout.
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
