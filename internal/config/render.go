package config

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/platforms"
)

type segKind int

const (
	segField  segKind = iota // struct field (a key of a fixed mapping)
	segMapKey                // key of a free-form mapping (personas.by_target)
	segItem                  // list item, by index or (jobs) by name
)

type seg struct {
	kind segKind
	name string // field key, map key, or item selector as written
}

// schemaPath splits a dotted key ("llm.model", "jobs.daily.prompt",
// "jobs[0].prompt", "personas.by_target.slack:C1:1700.1") against the
// schema. It returns the segments, the Go type at the end, and the
// canonical dotted key.
func schemaPath(key string) ([]seg, reflect.Type, error) {
	return schemaPathIn(platforms.Builtin, key)
}

// schemaPathIn is schemaPath with the platforms of reg: channels.<name> is
// a field whose type is the platform's section.
func schemaPathIn(reg *platform.Registry, key string) ([]seg, reflect.Type, error) {
	if strings.TrimSpace(key) == "" {
		return nil, nil, fmt.Errorf("empty key: use a dotted path such as llm.model")
	}
	norm := strings.NewReplacer("[", ".", "]", "").Replace(key)
	parts := strings.Split(norm, ".")
	t := reflect.TypeFor[Config]()
	var (
		segs []seg
		path string
	)
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		switch {
		case t == sectionsType:
			d, ok := reg.Lookup(p)
			if !ok {
				msg := fmt.Sprintf("unknown key %q in %s", truncate(p, 60), path)
				if s := suggest(p, reg.Names()); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					msg += " (known keys: " + strings.Join(reg.Names(), ", ") + ")"
				}
				return nil, nil, fmt.Errorf("%s", msg)
			}
			segs = append(segs, seg{kind: segField, name: p})
			t = reflect.TypeOf(d.Section()).Elem()
			path = joinKey(path, p)
		case t.Kind() == reflect.Struct && t != secretType:
			names, index := yamlFields(t)
			fi, ok := index[p]
			if !ok {
				where := " in " + path
				if path == "" {
					where = " at the top level"
				}
				msg := fmt.Sprintf("unknown key %q%s", truncate(p, 60), where)
				if s := suggest(p, names); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					msg += " (known keys: " + strings.Join(names, ", ") + ")"
				}
				return nil, nil, fmt.Errorf("%s", msg)
			}
			segs = append(segs, seg{kind: segField, name: p})
			t = t.Field(fi).Type
			path = joinKey(path, p)
		case t.Kind() == reflect.Map:
			rest := strings.Join(parts[i:], ".")
			if rest == "" {
				return nil, nil, fmt.Errorf("%s: empty map key", path)
			}
			segs = append(segs, seg{kind: segMapKey, name: rest})
			t = t.Elem()
			path += "." + rest
			i = len(parts)
		case t.Kind() == reflect.Slice:
			if p == "" {
				return nil, nil, fmt.Errorf("%s: empty list index", path)
			}
			if _, err := strconv.Atoi(p); err != nil && t.Elem() != reflect.TypeFor[Job]() {
				return nil, nil, fmt.Errorf("%s: list items are addressed by number (%s.0), got %q", path, path, truncate(p, 60))
			}
			segs = append(segs, seg{kind: segItem, name: p})
			t = t.Elem()
			path += "." + p
		default:
			return nil, nil, fmt.Errorf("%s is a single value; it has no key %q", path, truncate(p, 60))
		}
	}
	return segs, t, nil
}

// fieldByKey returns the settable value at a dotted struct-only key.
func fieldByKey(root reflect.Value, key string) (reflect.Value, error) {
	segs, _, err := schemaPathIn(root.Addr().Interface().(*Config).Platforms(), key)
	if err != nil {
		return reflect.Value{}, err
	}
	v := root
	for _, s := range segs {
		if s.kind != segField {
			return reflect.Value{}, fmt.Errorf("%s: not a plain field path", key)
		}
		if v, err = field(v, s.name); err != nil {
			return reflect.Value{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	return v, nil
}

// field is the field named by its yaml key of a struct, or the section of
// a platform (the struct its pointer points to).
func field(v reflect.Value, name string) (reflect.Value, error) {
	if v.Type() == sectionsType {
		sec := v.MapIndex(reflect.ValueOf(name))
		if !sec.IsValid() || sec.IsNil() {
			return reflect.Value{}, fmt.Errorf("no section %q", truncate(name, 60))
		}
		return sec.Elem().Elem(), nil
	}
	_, index := yamlFields(v.Type())
	return v.Field(index[name]), nil
}

// valueAt walks segs through a Config value.
func valueAt(c *Config, key string) (reflect.Value, error) {
	segs, _, err := schemaPathIn(c.Platforms(), key)
	if err != nil {
		return reflect.Value{}, err
	}
	v := reflect.ValueOf(c).Elem()
	path := ""
	for _, s := range segs {
		switch s.kind {
		case segField:
			if v, err = field(v, s.name); err != nil {
				return reflect.Value{}, fmt.Errorf("%s: %w", path, err)
			}
			path = joinKey(path, s.name)
		case segMapKey:
			e := v.MapIndex(reflect.ValueOf(s.name))
			if !e.IsValid() {
				return reflect.Value{}, fmt.Errorf("%s has no entry %q", path, truncate(s.name, 60))
			}
			v = e
			path += "." + s.name
		case segItem:
			i, err := itemIndex(v, s.name)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("%s: %w", path, err)
			}
			v = v.Index(i)
			path += "." + s.name
		}
	}
	return v, nil
}

// itemIndex finds a list item by number or, for jobs, by name.
func itemIndex(list reflect.Value, sel string) (int, error) {
	if i, err := strconv.Atoi(sel); err == nil {
		if i < 0 || i >= list.Len() {
			return 0, fmt.Errorf("no item %d (the list has %d)", i, list.Len())
		}
		return i, nil
	}
	for i := range list.Len() {
		if j, ok := list.Index(i).Interface().(Job); ok && j.Name == sel {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no job named %q", truncate(sel, 60))
}

// Get returns the value at a dotted key ("llm.model",
// "channels.telegram.mode", "jobs.daily.schedule", "agent.tools") as text:
// scalars as themselves, durations in Go syntax, secrets as "[redacted]"
// (or "" when unset), URLs through RedactURL, lists and sections as YAML. An unknown key is an
// error that suggests the closest known one.
func Get(c *Config, key string) (string, error) {
	if c == nil {
		return "", fmt.Errorf("config get %s: no configuration", key)
	}
	v, err := valueAt(c, key)
	if err != nil {
		return "", fmt.Errorf("config get %s: %w", key, err)
	}
	n := toNode(urlRedacted(key, v))
	if n.Kind == yaml.ScalarNode {
		return n.Value, nil
	}
	if n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("config get %s: %w", key, err)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// Redacted returns the whole configuration as nested maps keyed like
// config.yaml (durations as "30s", secrets as "[redacted]" or "", URLs
// through RedactURL), for
// `switchboard config get` and `doctor`.
func (c *Config) Redacted() map[string]any {
	m, _ := toAny(reflect.ValueOf(c).Elem()).(map[string]any)
	return m
}

// urlRedacted is v, or RedactURL of it when key names a URL (IsURLKey):
// every rendering of the config prints URLs without their credentials.
func urlRedacted(key string, v reflect.Value) reflect.Value {
	if v.Kind() == reflect.String && v.Type() != secretType && IsURLKey(key) {
		return reflect.ValueOf(RedactURL(v.String()))
	}
	return v
}

// RedactedYAML renders the whole configuration as YAML in config.yaml's key
// order, secrets redacted.
func (c *Config) RedactedYAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(toNode(reflect.ValueOf(c).Elem())); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func scalarText(v reflect.Value) (string, bool) {
	switch {
	case v.Type() == secretType:
		return v.Interface().(Secret).String(), true
	case v.Type() == durationType:
		return FormatDuration(time.Duration(v.Int())), true
	case v.Type() == sizeType:
		return Size(v.Int()).String(), true
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 32), true
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	}
	return "", false
}

func toAny(v reflect.Value) any {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if s, ok := scalarText(v); ok {
		switch v.Kind() {
		case reflect.Bool:
			return v.Bool()
		case reflect.Int, reflect.Int64:
			if v.Type() != durationType && v.Type() != sizeType {
				return int(v.Int())
			}
		case reflect.Float32, reflect.Float64:
			f, _ := strconv.ParseFloat(s, 64)
			return f
		}
		return s
	}
	switch v.Kind() {
	case reflect.Struct:
		names, index := yamlFields(v.Type())
		m := make(map[string]any, len(names))
		for _, n := range names {
			m[n] = toAny(urlRedacted(n, v.Field(index[n])))
		}
		return m
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toAny(v.Index(i))
		}
		return out
	case reflect.Map:
		m := make(map[string]any, v.Len())
		for _, k := range v.MapKeys() {
			m[k.String()] = toAny(v.MapIndex(k))
		}
		return m
	}
	return nil
}

func toNode(v reflect.Value) *yaml.Node {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		}
		v = v.Elem()
	}
	if s, ok := scalarText(v); ok {
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
		if v.Kind() == reflect.String || v.Type() == secretType || v.Type() == durationType || v.Type() == sizeType {
			n.Tag = "!!str"
		}
		return n
	}
	switch v.Kind() {
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		names, index := yamlFields(v.Type())
		for _, name := range names {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, toNode(urlRedacted(name, v.Field(index[name]))))
		}
		return n
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if v.Type().Elem().Kind() != reflect.Struct {
			n.Style = yaml.FlowStyle
		}
		for i := range v.Len() {
			n.Content = append(n.Content, toNode(v.Index(i)))
		}
		return n
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		if v.Type() == sectionsType {
			keys = sectionOrder(keys)
		}
		for _, k := range keys {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, toNode(v.MapIndex(reflect.ValueOf(k))))
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// sectionOrder puts the built-in platforms first, in config.yaml's order,
// then the others (sorted).
func sectionOrder(sorted []string) []string {
	out := make([]string, 0, len(sorted))
	for _, n := range platforms.Builtin.Names() {
		if slices.Contains(sorted, n) {
			out = append(out, n)
		}
	}
	for _, n := range sorted {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
