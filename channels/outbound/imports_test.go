package outbound_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/switchboard-bot/switchboard"

// allowedImports are the project packages delivery may compile (the package
// doc comment says why): the contract, storage's record types and
// interfaces, and leaf helpers below them. Never the agent, the hub or a
// storage driver.
var allowedImports = []string{
	module + "/channels",
	module + "/channels/markup",
	module + "/memory",
}

// TestImportsOnlyTheContractAndStorage walks the package's non-test imports,
// and theirs, and fails on any project package outside allowedImports and
// internal/ leaves (which themselves import nothing of the project).
func TestImportsOnlyTheContractAndStorage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // package → the package that imported it
	var walk func(pkg string)
	walk = func(pkg string) {
		for _, imp := range projectImports(t, root, pkg) {
			if _, ok := seen[imp]; ok {
				continue
			}
			seen[imp] = pkg
			walk(imp)
		}
	}
	walk(module + "/channels/outbound")
	for imp, by := range seen {
		leaf := strings.HasPrefix(imp, module+"/internal/") && len(projectImports(t, root, imp)) == 0
		if !slices.Contains(allowedImports, imp) && !leaf {
			t.Errorf("channels/outbound compiles %s (imported by %s); delivery imports only the contract and storage interfaces",
				strings.TrimPrefix(imp, module+"/"), strings.TrimPrefix(by, module+"/"))
		}
	}
	if _, ok := seen[module+"/channels"]; !ok {
		t.Error("channels/outbound does not import channels: the walk found no imports at all")
	}
}

// projectImports lists the project packages the non-test files of pkg import.
func projectImports(t *testing.T, root, pkg string) []string {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(pkg, module)))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("package %s: no Go files in %s (%v)", pkg, dir, err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range af.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if strings.HasPrefix(p, module+"/") && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
