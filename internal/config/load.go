package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

// Error is one problem in a configuration file. Its text is
// "<file>:<line>: <message>" ("<file>:<line>:<column>: …" when the column is
// known, "<file>: <message>" when no line is known);
// the message names the dotted key path. Errors never contain a secret.
type Error struct {
	File string
	Line int    // 0 when unknown
	Col  int    // column on Line, 0 when unknown
	Key  string // dotted key path, e.g. "channels.telegram.token"; "" for syntax errors
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 && e.Col > 0 {
		return e.File + ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col) + ": " + e.Msg
	}
	if e.Line > 0 {
		return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return e.File + ": " + e.Msg
}

// sourceMap records, per dotted key path, where a value came from.
type sourceMap struct {
	lines   map[string]int      // line of the key (or item) in the file
	refs    map[string][]string // environment variables the value referenced
	present map[string]bool     // keys written in the file
	raw     map[string]string   // text as written, for values that referenced variables
	// env expanded the values in raw (display.go: messages show raw, not
	// what env gives). Only the function is kept, never a value it gave,
	// so that no rendering of a Config shows one.
	env EnvFunc
}

func newSourceMap() *sourceMap {
	return &sourceMap{lines: map[string]int{}, refs: map[string][]string{}, present: map[string]bool{}, raw: map[string]string{}}
}

// line returns the line of key or of its nearest ancestor written in the file.
func (s *sourceMap) line(key string) int {
	if s == nil {
		return 0
	}
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := s.lines[k]; ok {
			return l
		}
	}
	return 0
}

func parentKey(k string) string {
	i := strings.LastIndexAny(k, ".[")
	if i < 0 {
		return ""
	}
	return k[:i]
}

// Load reads path and returns the validated configuration, expanding ${VAR}
// from the process environment. A missing file is not an error: the result
// is the defaults (with the environment-backed keys filled from the
// environment) and Path set.
func Load(path string) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Parse(path, nil, os.LookupEnv)
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse decodes data (the contents of the file at path; path is used for
// error messages and Config.Path) strictly, expands ${VAR} through env and
// validates the result. Empty data yields the defaults.
func Parse(path string, data []byte, env func(string) (string, bool)) (*Config, error) {
	return ParseWith(platforms.Builtin, path, data, env)
}

// ParseWith is Parse with the platforms of reg (a test's registry with a
// platform of its own); the result's Platforms is reg.
func ParseWith(reg *platform.Registry, path string, data []byte, env func(string) (string, bool)) (*Config, error) {
	file := displayName(path)
	cfg := defaultWith(reg)
	cfg.Path = path
	cfg.src = newSourceMap()
	cfg.src.env = env
	cfg.digest = DigestOf(data)

	root, err := parseYAML(file, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{reg: reg, file: file, env: env, src: cfg.src}
	if root != nil {
		d.decodeStruct(root, reflect.ValueOf(cfg).Elem(), "")
	}
	d.applyEnvDefaults(cfg)
	cfg.mcpDefaults()
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func displayName(path string) string {
	if path == "" {
		return "config.yaml"
	}
	return path
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses data into its root node: nil for an empty document (or
// one holding only comments or null).
func parseYAML(file string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, &Error{File: file, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlError(file, data, err)
		}
		return nil, &Error{File: file, Line: extra.Line, Msg: "a second YAML document is not allowed (remove the \"---\")"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	n := resolveAlias(doc.Content[0])
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: n.Line, Msg: "the top level must be a mapping of keys (bot:, llm:, …), got " + kindName(n)}
	}
	return n, nil
}

func yamlError(file string, data []byte, err error) error {
	msg := err.Error()
	line := 0
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if e := yamlHint(file, data, line, msg); e != nil {
		return e
	}
	if e := placeSyntaxError(file, data, err.Error(), line, msg); e != nil {
		return e
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// DigestOf identifies the contents of a configuration file: the running
// daemon's config (Config.Digest) and a file on disk with the same digest
// hold the same text.
func DigestOf(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// Digest is DigestOf the bytes the configuration was parsed from; "" for a
// Config built in code (Default).
func (c *Config) Digest() string { return c.digest }

// ParseLenient decodes what it can of data and validates nothing: every key
// that decodes is set, the others keep their defaults (when the YAML does
// not parse, every top-level block that parses on its own still counts, and
// of a broken block its lines above the first that fails: salvage.go). It is for
// reaching the running daemon while the file is invalid (server.listen,
// server.admin_token, bot.data_dir), never for running anything.
func ParseLenient(path string, data []byte, env EnvFunc) *Config {
	cfg := Default()
	cfg.Path = path
	cfg.src = newSourceMap()
	cfg.src.env = env
	root, err := parseYAML(displayName(path), data)
	if err != nil {
		root = salvageYAML(data)
	}
	if root == nil {
		return cfg
	}
	d := &decoder{reg: cfg.Platforms(), file: displayName(path), env: env, src: cfg.src}
	d.decodeStruct(root, reflect.ValueOf(cfg).Elem(), "")
	d.applyEnvDefaults(cfg)
	return cfg
}
