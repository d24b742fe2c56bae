package testenv

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// CopyTerraformTree copies the configuration (.tf) and test (.tftest.hcl) files of the folder
// src and its subfolders (but Terraform's own, .terraform*) into a new folder of tb's, which it
// returns: a tree of examples whose module sources are relative paths, to run terraform in
// without writing to src.
func CopyTerraformTree(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), filepath.Base(src))
	root, err := os.OpenRoot(src)
	if err != nil {
		tb.Fatalf("copying %s: %v", src, err)
	}
	defer func() { _ = root.Close() }()
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".terraform") {
				return filepath.SkipDir
			}
			if err := os.MkdirAll(filepath.Join(dst, rel), 0o700); err != nil {
				return fmt.Errorf("making the copy of %s: %w", rel, err)
			}
			return nil
		}
		if !strings.HasSuffix(p, ".tf") && !strings.HasSuffix(p, ".tftest.hcl") {
			return nil
		}
		data, err := root.ReadFile(rel)
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, rel), data, 0o600)
		}
		if err != nil {
			return fmt.Errorf("copying %s: %w", rel, err)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("copying %s: %v", src, err)
	}
	return dst
}

// tfState is what ImportBlocks reads of `terraform show -json`.
type tfState struct {
	Values struct {
		RootModule tfModule `json:"root_module"`
	} `json:"values"`
}

type tfModule struct {
	Resources []struct {
		Address  string         `json:"address"`
		Mode     string         `json:"mode"`
		Values   map[string]any `json:"values"`
		Identity map[string]any `json:"identity"`
	} `json:"resources"`
	ChildModules []tfModule `json:"child_modules"`
}

// ImportBlocks returns an import block for each managed resource of a state (`terraform show
// -json` of it), and how many there are: by its `id` attribute (the import ID of this provider's
// resources), or with byIdentity by its resource identity (Terraform >= 1.12, OpenTofu >= 1.12).
func ImportBlocks(showJSON []byte, byIdentity bool) (string, int, error) {
	var st tfState
	if err := json.Unmarshal(showJSON, &st); err != nil {
		return "", 0, fmt.Errorf("reading the state: %w", err)
	}
	var blocks []string
	var walk func(m tfModule) error
	walk = func(m tfModule) error {
		for _, r := range m.Resources {
			if r.Mode != "managed" {
				continue
			}
			if byIdentity {
				if len(r.Identity) == 0 {
					return fmt.Errorf("%s has no identity in the state", r.Address)
				}
				blocks = append(blocks, fmt.Sprintf("import {\n  to = %s\n  identity = %s\n}\n", r.Address, hclObject(r.Identity)))
				continue
			}
			id, ok := r.Values["id"].(string)
			if !ok || id == "" {
				return fmt.Errorf("%s has no id in the state", r.Address)
			}
			blocks = append(blocks, fmt.Sprintf("import {\n  to = %s\n  id = %q\n}\n", r.Address, id))
		}
		for _, c := range m.ChildModules {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(st.Values.RootModule); err != nil {
		return "", 0, err
	}
	sort.Strings(blocks)
	return strings.Join(blocks, "\n"), len(blocks), nil
}

// hclObject writes a flat JSON object (a resource identity: strings, numbers, bools) as an HCL
// object expression, its keys sorted.
func hclObject(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range keys {
		v, _ := json.Marshal(m[k]) // a JSON string, number or bool is also an HCL literal
		fmt.Fprintf(&b, "    %s = %s\n", k, v)
	}
	b.WriteString("  }")
	return b.String()
}

// ExpectImportsQuiet checks that what state (a state file of the configuration in folder
// example of the examples tree) holds, imported by ID into an empty state, plans nothing but
// the imports (ExpectImports). tf runs terraform in a folder with the arguments and returns its
// output and exit code; vars are the plan's further arguments (-var ...).
func ExpectImportsQuiet(tb testing.TB, examples, example, state string, vars []string, except map[string]string,
	tf func(dir string, args ...string) (string, int),
) {
	tb.Helper()
	out, code := tf(filepath.Join(examples, example), "show", "-json", "-no-color", state)
	if code != 0 {
		tb.Fatalf("terraform show -json %s: exit %d\n%s", state, code, out)
	}
	ExpectImports(tb, ImportCheck{Examples: examples, Example: example, StateJSON: []byte(out), Vars: vars, Except: except, CLI: tf})
}

// ImportCheck is what ExpectImports checks: the managed resources of a state, imported into an
// empty state with the configuration they were applied with.
type ImportCheck struct {
	// Examples is the examples tree; Example, the folder in it whose configuration made the state.
	Examples, Example string
	// StateJSON is `terraform show -json` of the state.
	StateJSON []byte
	// Vars are the plan's further arguments (-var ...).
	Vars []string
	// Except names, by address, the resources whose import cannot be quiet and what their plan
	// does then ("update" or "replace": a write-only value or a private key, which no import reads).
	Except map[string]string
	// ByIdentity imports by resource identity rather than by ID.
	ByIdentity bool
	// CLI runs terraform (or OpenTofu's tofu) in a folder with the arguments and returns its
	// output and exit code.
	CLI func(dir string, args ...string) (string, int)
}

// ExpectImports checks that the resources of c's state, imported into an empty state, plan
// nothing but the imports: the provider reads every attribute back as the configuration has it.
// Only `timeouts`, which no import can read, may show as an in-place change, and what c.Except
// says. It works in a copy of the tree (CopyTerraformTree), with import blocks in a file of
// their own.
func ExpectImports(tb testing.TB, c ImportCheck) {
	tb.Helper()
	how := "by ID"
	if c.ByIdentity {
		how = "by identity"
	}
	blocks, n, err := ImportBlocks(c.StateJSON, c.ByIdentity)
	if err != nil {
		tb.Fatalf("examples/%s: %v", c.Example, err)
	}
	dir := filepath.Join(CopyTerraformTree(tb, c.Examples), c.Example)
	if err := os.WriteFile(filepath.Join(dir, "imports_check.tf"), []byte(blocks), 0o600); err != nil {
		tb.Fatal(err)
	}
	if out, code := c.CLI(dir, "get", "-no-color"); code != 0 { // local modules; the provider comes from the CLI configuration
		tb.Fatalf("get in a copy of examples/%s: exit %d\n%s", c.Example, code, out)
	}
	planFile := filepath.Join(tb.TempDir(), "imports.tfplan")
	args := append([]string{"plan", "-input=false", "-no-color", "-out=" + planFile,
		"-state=" + filepath.Join(tb.TempDir(), "imported.tfstate")}, c.Vars...)
	planOut, code := c.CLI(dir, args...)
	if code != 0 {
		tb.Fatalf("examples/%s imported %s: plan exit %d\n%s\nimports:\n%s", c.Example, how, code, planOut, blocks)
	}
	out, code := c.CLI(dir, "show", "-json", "-no-color", planFile)
	if code != 0 {
		tb.Fatalf("show -json of the import plan: exit %d\n%s", code, out)
	}
	if problems := importPlanProblems([]byte(out), n, c.Except); len(problems) > 0 {
		tb.Errorf("examples/%s imported %s (%d resources) into an empty state:\n  %s\n%s\nimports:\n%s", c.Example, how, n,
			strings.Join(problems, "\n  "), planOut, blocks)
	}
}

// importPlanProblems checks a plan (`terraform show -json` of it) of n imports: each resource
// imported, and changed only as except says, or in timeouts alone.
func importPlanProblems(planJSON []byte, n int, except map[string]string) []string {
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string       `json:"actions"`
				Before    map[string]any `json:"before"`
				After     map[string]any `json:"after"`
				Importing any            `json:"importing"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(planJSON, &plan); err != nil {
		return []string{fmt.Sprintf("reading the plan: %v", err)}
	}
	var problems []string
	imported := 0
	for _, rc := range plan.ResourceChanges {
		ch := rc.Change
		if ch.Importing != nil {
			imported++
		}
		actions := strings.Join(ch.Actions, ",")
		switch want := except[rc.Address]; {
		case want == "update" && actions == "update", want == "replace" && (actions == "delete,create" || actions == "create,delete"):
		case want != "":
			problems = append(problems, fmt.Sprintf("%s: %s, want %s (what no import reads)", rc.Address, actions, want))
		case actions == "no-op":
		case actions == "update" && onlyTimeoutsDiffer(ch.Before, ch.After):
		default:
			problems = append(problems, fmt.Sprintf("%s: %s, want no change (but timeouts)", rc.Address, actions))
		}
	}
	if imported != n {
		problems = append(problems, fmt.Sprintf("%d resources imported, want %d", imported, n))
	}
	return problems
}

// onlyTimeoutsDiffer tells whether two values of a resource differ in `timeouts` alone.
func onlyTimeoutsDiffer(before, after map[string]any) bool {
	if len(before) != len(after) {
		return false
	}
	for k, v := range before {
		w, ok := after[k]
		if k != "timeouts" && (!ok || !reflect.DeepEqual(v, w)) {
			return false
		}
	}
	return true
}
