package registry_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/peerkit/terraform-provider-liqo/internal/release"
)

// publication is one release a registry serves: the folder of its files and the key the
// registry says signed it.
type publication struct {
	dir     string
	version string
	targets []release.Target
	// keyArmor and keyID are the public signing key the registry hands out with the release.
	keyArmor, keyID string
}

// registry speaks the provider registry protocol (service discovery, versions, download) over
// release folders, one per namespace, for the provider type liqo; the files themselves are
// served under /files/<namespace>/.
type registry struct {
	base string // https://host:port, for the download URLs
	mu   sync.Mutex
	pubs map[string]publication
}

// ServeHTTP answers the protocol's requests.
func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	if path == "/.well-known/terraform.json" {
		writeJSON(w, map[string]string{"providers.v1": "/v1/providers/"})
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case len(parts) == 3 && parts[0] == "files":
		pub, ok := r.pubs[parts[1]]
		if !ok || strings.Contains(parts[2], "..") {
			http.NotFound(w, req)
			return
		}
		http.ServeFile(w, req, filepath.Join(pub.dir, parts[2]))
	case len(parts) == 5 && parts[0] == "v1" && parts[1] == "providers" && parts[3] == "liqo" && parts[4] == "versions":
		pub, ok := r.pubs[parts[2]]
		if !ok {
			http.NotFound(w, req)
			return
		}
		writeJSON(w, versionsResponse(pub))
	case len(parts) == 8 && parts[0] == "v1" && parts[1] == "providers" && parts[3] == "liqo" && parts[5] == "download":
		pub, ok := r.pubs[parts[2]]
		if !ok || parts[4] != pub.version {
			http.NotFound(w, req)
			return
		}
		resp, err := r.download(parts[2], pub, release.Target{OS: parts[6], Arch: parts[7]})
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, resp)
	default:
		http.NotFound(w, req)
	}
}

// versionsResponse lists pub's only version and its platforms.
func versionsResponse(pub publication) map[string]any {
	platforms := []map[string]string{}
	for _, t := range pub.targets {
		platforms = append(platforms, map[string]string{"os": t.OS, "arch": t.Arch})
	}
	return map[string]any{"versions": []map[string]any{{
		"version": pub.version, "protocols": []string{"6.0"}, "platforms": platforms,
	}}}
}

// download describes pub's package for t, its checksum taken from the release's SHA256SUMS file
// (what a registry records when the release is published).
func (r *registry) download(ns string, pub publication, t release.Target) (map[string]any, error) {
	files := release.FileNames(pub.version, []release.Target{t})
	zip := files.Zips[0]
	sum, err := sumOf(filepath.Join(pub.dir, files.Sums), zip)
	if err != nil {
		return nil, err
	}
	url := func(name string) string { return r.base + "/files/" + ns + "/" + name }
	return map[string]any{
		"protocols": []string{"6.0"}, "os": t.OS, "arch": t.Arch,
		"filename": zip, "download_url": url(zip), "shasum": sum,
		"shasums_url": url(files.Sums), "shasums_signature_url": url(files.Signature),
		"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{
			"key_id": pub.keyID, "ascii_armor": pub.keyArmor,
		}}},
	}, nil
}

// sumOf finds name's checksum in a SHA256SUMS file.
func sumOf(sumsFile, name string) (string, error) {
	f, err := os.Open(sumsFile)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, file, ok := strings.Cut(sc.Text(), "  "); ok && file == name {
			return sum, nil
		}
	}
	return "", fmt.Errorf("%s is not in %s", name, filepath.Base(sumsFile))
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
