package config

// Editing helpers for the web console (internal/ui): preview a `config set`
// without writing, replace the whole file through the same validation, and
// find secrets written in plain text (the console never shows those).

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/internal/config/yamledit"
)

// SetPreview returns the file at path before and after SetInFile(path, key,
// value) would change it, and the configuration the result loads to, without
// writing anything. The errors are SetInFile's (file:line where known).
func SetPreview(path, key, value string) (before, after []byte, cfg *Config, err error) {
	before, err = ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	segs, leaf, err := schemaPath(key)
	if err != nil {
		return before, nil, nil, fmt.Errorf("config: %s: %w", key, err)
	}
	e, err := newEditor(displayName(path), before, segs, leaf, key)
	if err != nil {
		return before, nil, nil, err
	}
	if err := e.Set(value); err != nil {
		if errors.Is(err, yamledit.ErrNoChange) {
			cfg, err := Parse(path, before, os.LookupEnv)
			return before, before, cfg, err
		}
		return before, nil, nil, fmt.Errorf("config: %s: %w", key, err)
	}
	if after, err = e.Result(); err != nil {
		return before, nil, nil, fmt.Errorf("config: %s: %w", key, err)
	}
	if cfg, err = Parse(path, after, os.LookupEnv); err != nil {
		return before, nil, nil, fmt.Errorf("config: refusing to change %s (the file is unchanged): %w", key, err)
	}
	return before, after, cfg, nil
}

// ReadFile reads the configuration file at path as the editors do (size
// bounded, symlinks followed); a missing file reads as empty.
func ReadFile(path string) ([]byte, error) {
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", displayName(path), err)
	}
	return data, nil
}

// CheckFile loads data as the file at path would load (process environment),
// without writing: the configuration, or the file:line errors.
func CheckFile(path string, data []byte) (*Config, error) {
	return Parse(path, data, os.LookupEnv)
}

// ReplaceFile writes data as the whole file at path after the validation
// SetInFile applies (Parse with the process environment): an invalid file is
// refused with its file:line errors and nothing is written. The write is
// atomic and keeps the file's mode. ifUnchanged, when not nil, must still be
// the file's content, so an edit based on an old copy does not overwrite a
// newer one.
func ReplaceFile(path string, data, ifUnchanged []byte) error {
	if _, err := Parse(path, data, os.LookupEnv); err != nil {
		return fmt.Errorf("config: refusing to write %s (the file is unchanged): %w", displayName(path), err)
	}
	return WriteVerified(path, data, ifUnchanged)
}

// WriteVerified writes data as the whole file at path, atomically and
// keeping the file's mode, when ifUnchanged (if not nil) is still its
// content. It does not load data: the caller has had it checked where it
// will run (`config set` asks the running daemon, whose environment can
// differ from the CLI's).
func WriteVerified(path string, data, ifUnchanged []byte) error {
	real := path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		real = p
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(real); err == nil {
		mode = st.Mode().Perm()
	}
	if ifUnchanged != nil {
		cur, err := ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(cur, ifUnchanged) {
			return fmt.Errorf("config: %s changed since it was read; nothing was written (reload and edit again)", displayName(path))
		}
	}
	if err := yamledit.WriteAtomic(real, data, mode); err != nil {
		return fmt.Errorf("config: write %s: %w", displayName(path), err)
	}
	return nil
}

// PlaintextSecrets lists, as "line N: key", the secret-valued keys (tokens,
// API keys, MCP env and headers) and URL keys with credentials that data
// writes as literal text rather than as ${ENV} references. A file with none
// can be shown whole without revealing a secret.
func PlaintextSecrets(data []byte) []string {
	root, err := parseYAML("config.yaml", data)
	if err != nil || root == nil {
		return nil
	}
	var out []string
	walkPlaintextSecrets(root, "", func(n *yaml.Node, key string) {
		out = append(out, fmt.Sprintf("line %d: %s", n.Line, key))
	})
	return out
}

// PlaintextSecretLines returns the lines of data (1-based) that show a value
// PlaintextSecrets lists: true for the line where the value starts (its key
// may be on it too), false for the further lines of a value written over
// several lines (up to where the next node starts).
func PlaintextSecretLines(data []byte) map[int]bool {
	root, err := parseYAML("config.yaml", data)
	if err != nil || root == nil {
		return nil
	}
	var starts []int
	var collect func(n *yaml.Node)
	collect = func(n *yaml.Node) {
		starts = append(starts, n.Line)
		for _, c := range n.Content {
			collect(c)
		}
	}
	collect(root)
	sort.Ints(starts)
	last := bytes.Count(data, []byte("\n")) + 1
	out := map[int]bool{}
	walkPlaintextSecrets(root, "", func(n *yaml.Node, _ string) {
		end := last
		if i := sort.SearchInts(starts, n.Line+1); i < len(starts) {
			end = starts[i] - 1
		}
		out[n.Line] = true
		for l := n.Line + 1; l <= end; l++ {
			if _, ok := out[l]; !ok {
				out[l] = false
			}
		}
	})
	return out
}

// ValueHoldsSecret reports whether value, set at key (a dotted path, as
// SetInFile takes it), writes a secret in plain text below key: a section
// given whole with one inside ("channels.discord" = {token: …}). A value
// that is not valid YAML cannot be checked and counts as holding one.
func ValueHoldsSecret(key, value string) bool {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return true
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return false
	}
	n := doc.Content[0]
	parts := strings.Split(strings.NewReplacer("[", ".", "]", "").Replace(key), ".")
	for i := len(parts) - 1; i >= 0; i-- {
		n = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: parts[i]}, n}}
	}
	found := false
	walkPlaintextSecrets(n, "", func(*yaml.Node, string) { found = true })
	return found
}

// writtenText is the text of a value with ${…} references that the file
// itself writes: the value as it expands with every variable unset, when a
// default (${VAR:-…}) contributes to it, else "" (references only, "Bearer
// ${TOKEN}" included).
func writtenText(v string) string {
	withDefaults, _, err := expand(v, nil)
	if err != nil {
		return v // not a valid reference: the text is literal
	}
	noDefaults, _, _ := expand(v, func(string) (string, bool) { return "\x00", true })
	if withDefaults == strings.ReplaceAll(noDefaults, "\x00", "") {
		return ""
	}
	return withDefaults
}

// walkPlaintextSecrets calls found for every secret-valued scalar below n
// (key is n's dotted key) written as literal text.
func walkPlaintextSecrets(n *yaml.Node, key string, found func(n *yaml.Node, key string)) {
	n = resolveAlias(n)
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if key != "" {
				k = key + "." + k
			}
			walkPlaintextSecrets(n.Content[i+1], k, found)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkPlaintextSecrets(c, key+"["+strconv.Itoa(i)+"]", found)
		}
	case yaml.ScalarNode:
		v := n.Value
		if strings.Contains(v, "${") {
			v = writtenText(v)
		}
		if v == "" {
			return
		}
		if IsSecretKey(key) || mcpSecretKey(key) || (IsURLKey(key) && RedactURL(v) != v) {
			found(n, key)
		}
	}
}

// mcpSecretKey reports whether key is an MCP server's env variable or
// header (mcp.servers.NAME.env.VAR, mcp.servers.NAME.headers.H): secrets.
func mcpSecretKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "mcp.servers.")
	if !ok {
		return false
	}
	return strings.Contains(rest, ".env.") || strings.Contains(rest, ".headers.")
}
