package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// saDir is where a pod's ServiceAccount token and the cluster's CA are mounted.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// get prints the body of GET url; a status other than 200 is an error.
func get(url string) error {
	return fetch(&http.Client{Timeout: 10 * time.Second}, url, "")
}

// apiserverVersion prints the API server's /version, authenticated with the pod's token and
// verified against the cluster's CA, as client-go's in-cluster configuration does.
func apiserverVersion() error {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return errors.New("KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT not set: not in a pod")
	}
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return fmt.Errorf("reading the ServiceAccount token: %w", err)
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return fmt.Errorf("reading the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("no certificate in " + saDir + "/ca.crt")
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	return fetch(client, "https://"+net.JoinHostPort(host, port)+"/version", strings.TrimSpace(string(token)))
}

func fetch(client *http.Client, url, token string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil) //nolint:gosec // a test client: it fetches the URL it is given
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req) //nolint:gosec // a test client: it fetches the URL it is given
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	if _, err := os.Stdout.Write(body); err != nil {
		return fmt.Errorf("writing the body: %w", err)
	}
	return nil
}
