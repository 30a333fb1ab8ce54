package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

type decoder struct {
	reg  *platform.Registry
	file string
	env  EnvFunc
	src  *sourceMap
	errs []error

	depth   int  // current nesting (merge keys and aliases can recurse)
	visited int  // nodes decoded, bounded against alias bombs
	tooDeep bool // reported once
}

const (
	maxDepth   = 32
	maxVisited = 50000
)

// enter guards recursion; callers must call leave when it returns true.
func (d *decoder) enter(n *yaml.Node, key string) bool {
	d.visited++
	if d.depth >= maxDepth || d.visited > maxVisited {
		if !d.tooDeep {
			d.tooDeep = true
			where := key
			if where == "" {
				where = "the top level"
			}
			d.fail(n.Line, key, "%s: too deeply nested or too many alias expansions (a merge key or alias that refers to itself?)", where)
		}
		return false
	}
	d.depth++
	return true
}

func (d *decoder) leave() { d.depth-- }

func (d *decoder) fail(line int, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
	sectionsType = reflect.TypeFor[Channels]()
)

// yamlFields lists a struct type's fields by yaml key, in declaration order.
func yamlFields(t reflect.Type) (names []string, index map[string]int) {
	index = map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		index[name] = i
	}
	return names, index
}

func describeSection(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeStruct applies a mapping node to the struct v.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	if n == nil || !d.enter(n, path) {
		return
	}
	defer d.leave()
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, path, "%s: expected a mapping of keys, got %s", path, kindName(n))
		return
	}
	names, index := yamlFields(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k.Line, path, "keys must be plain words%s, got %s", describeSection(path), kindName(k))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			d.decodeMerge(val, v, path)
			continue
		}
		fi, ok := index[k.Value]
		if !ok {
			where := describeSection(path)
			if path == "" {
				where = " at the top level"
			}
			d.unknownKey(k, path, where, names)
			continue
		}
		key, ok := d.claimKey(k, path, seen)
		if !ok {
			continue
		}
		d.decodeValue(val, v.Field(fi), key)
	}
}

// decodeMerge handles YAML merge keys ("<<: *anchor").
func (d *decoder) decodeMerge(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		d.decodeStruct(n, v, path)
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c = resolveAlias(c); c.Kind == yaml.MappingNode {
				d.decodeStruct(c, v, path)
			}
		}
	default:
		d.fail(n.Line, path, "%s: a merge key (<<) needs a mapping, got %s", path, kindName(n))
	}
}

// scalar returns the expanded text of a scalar node.
func (d *decoder) scalar(n *yaml.Node, key string, secret bool) (string, bool) {
	s, refs, err := expand(n.Value, d.env)
	if len(refs) > 0 {
		d.src.refs[key] = refs
		d.src.raw[key] = n.Value
	}
	if err != nil {
		if secret {
			d.fail(n.Line, key, "%s: invalid ${...} reference", key)
		} else {
			d.fail(n.Line, key, "%s: %v", key, err)
		}
		return "", false
	}
	return s, true
}

func (d *decoder) decodeValue(n *yaml.Node, v reflect.Value, key string) {
	n = resolveAlias(n)
	if n == nil || !d.enter(n, key) {
		return
	}
	defer d.leave()
	if isNull(n) {
		return // null keeps the default
	}
	t := v.Type()
	switch {
	case t == secretType:
		d.decodeSecret(n, v, key)
		return
	case t == durationType:
		d.decodeDuration(n, v, key)
		return
	case t == sizeType:
		d.decodeSize(n, v, key)
		return
	case t == sectionsType:
		d.decodeChannels(n, v, key)
		return
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Float32, reflect.Float64:
		d.decodeScalar(n, v, key)
	case reflect.Struct:
		d.decodeStruct(n, v, key)
	case reflect.Slice:
		d.decodeSlice(n, v, key)
	case reflect.Map:
		d.decodeMap(n, v, key)
	default:
		d.fail(n.Line, key, "%s: unsupported type %s", key, t)
	}
}

func (d *decoder) decodeSecret(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n.Line, key, "%s: expected a string, got %s", key, kindName(n))
		return
	}
	if s, ok := d.scalar(n, key, true); ok {
		v.Set(reflect.ValueOf(NewSecret(s)))
	}
}

func (d *decoder) decodeDuration(n *yaml.Node, v reflect.Value, key string) {
	s, ok := d.scalarOf(n, key, "a duration such as 30s, 5m, 4h or 7d")
	if !ok {
		return
	}
	dur, err := ParseDuration(s)
	if err != nil {
		d.fail(n.Line, key, "%s: expected a duration such as 30s, 5m, 4h or 7d, got %q", key, truncate(n.Value, 60))
		return
	}
	v.SetInt(int64(dur))
}

// decodeScalar decodes a string, bool, int or float value.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, key string) {
	t := v.Type()
	switch t.Kind() {
	case reflect.String:
		if s, ok := d.scalarOf(n, key, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalarOf(n, key, "true or false")
		if !ok {
			return
		}
		b, err := parseBool(s)
		if err != nil {
			d.fail(n.Line, key, "%s: expected true or false, got %q", key, truncate(n.Value, 60))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		s, ok := d.scalarOf(n, key, "an integer")
		if !ok {
			return
		}
		i, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
		if err != nil || i != int64(int(i)) {
			d.fail(n.Line, key, "%s: expected an integer, got %q", key, truncate(n.Value, 60))
			return
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		s, ok := d.scalarOf(n, key, "a number")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), t.Bits())
		if err != nil {
			d.fail(n.Line, key, "%s: expected a number, got %q", key, truncate(n.Value, 60))
			return
		}
		v.SetFloat(f)
	}
}

func (d *decoder) scalarOf(n *yaml.Node, key, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n.Line, key, "%s: expected %s, got %s", key, want, kindName(n))
		return "", false
	}
	return d.scalar(n, key, false)
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n.Line, key, "%s: expected a list, got %s (write [a, b] or one \"- item\" per line)", key, kindName(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	elem := v.Type().Elem()
	for i, c := range n.Content {
		ikey := fmt.Sprintf("%s[%d]", key, i)
		c = resolveAlias(c)
		d.src.lines[ikey] = c.Line
		ev := reflect.New(elem).Elem()
		if elem == reflect.TypeFor[Job]() {
			ev.Set(reflect.ValueOf(defaultJob()))
			d.decodeStruct(c, ev, ikey)
		} else {
			if isNull(c) {
				d.fail(c.Line, ikey, "%s: empty list item", ikey)
				continue
			}
			d.decodeValue(c, ev, ikey)
		}
		out = reflect.Append(out, ev)
	}
	v.Set(out)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, key, "%s: expected a mapping (key: value), got %s", key, kindName(n))
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.fail(k.Line, key, "%s: keys must be strings, got %s", key, kindName(k))
			continue
		}
		ekey := key + "." + k.Value
		if out.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.fail(k.Line, ekey, "%s: key %q is set twice", key, truncate(k.Value, 60))
			continue
		}
		d.src.lines[ekey] = k.Line
		ev := reflect.New(v.Type().Elem()).Elem()
		if isNull(resolveAlias(val)) {
			d.fail(k.Line, ekey, "%s: %q has no value", key, truncate(k.Value, 60))
			continue
		}
		d.decodeValue(val, ev, ekey)
		out.SetMapIndex(reflect.ValueOf(k.Value), ev)
	}
	v.Set(out)
}

// decodeChannels applies the channels mapping: each key is a registered
// platform whose section (a struct pointer holding its defaults) is decoded
// like any other section.
func (d *decoder) decodeChannels(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n.Line, path, "%s: expected a mapping of keys, got %s", path, kindName(n))
		return
	}
	names := d.reg.Names()
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k.Line, path, "keys must be plain words%s, got %s", describeSection(path), kindName(k))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			d.mergeChannels(val, v, path)
			continue
		}
		sec, ok := v.Interface().(Channels)[k.Value]
		if !ok {
			d.unknownKey(k, path, " in "+path, names)
			continue
		}
		key, ok := d.claimKey(k, path, seen)
		if !ok {
			continue
		}
		d.decodeValue(val, reflect.ValueOf(sec).Elem(), key)
	}
}

// unknownKey reports key k, unknown where (" in bot", " at the top
// level"), with the closest of names or the list of them.
func (d *decoder) unknownKey(k *yaml.Node, path, where string, names []string) {
	msg := fmt.Sprintf("unknown key %q%s", truncate(k.Value, 60), where)
	if s := suggest(k.Value, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else {
		msg += " (known keys: " + strings.Join(names, ", ") + ")"
	}
	d.fail(k.Line, joinKey(path, k.Value), "%s", msg)
}

// claimKey records key k of the mapping at path as set on its line; a key
// set twice in one mapping is reported and not decoded again (ok false).
func (d *decoder) claimKey(k *yaml.Node, path string, seen map[string]int) (key string, ok bool) {
	key = joinKey(path, k.Value)
	if first, dup := seen[k.Value]; dup {
		d.fail(k.Line, key, "%s is set twice (first on line %d)", key, first)
		return key, false
	}
	seen[k.Value] = k.Line
	d.src.lines[key] = k.Line
	d.src.present[key] = true
	return key, true
}

// mergeChannels handles a merge key ("<<: *anchor") in channels.
func (d *decoder) mergeChannels(n *yaml.Node, v reflect.Value, path string) {
	n = resolveAlias(n)
	if n == nil || !d.enter(n, path) {
		return
	}
	defer d.leave()
	switch n.Kind {
	case yaml.MappingNode:
		d.decodeChannels(n, v, path)
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c = resolveAlias(c); c.Kind == yaml.MappingNode {
				d.decodeChannels(c, v, path)
			}
		}
	default:
		d.fail(n.Line, path, "%s: a merge key (<<) needs a mapping, got %s", path, kindName(n))
	}
}

// applyEnvDefaults fills the environment-backed keys absent from the file.
func (d *decoder) applyEnvDefaults(c *Config) {
	for _, e := range envDefaultsOf(d.reg) {
		if d.src.present[e.key] {
			continue
		}
		f, err := fieldByKey(reflect.ValueOf(c).Elem(), e.key)
		if err != nil {
			continue
		}
		val, _, _ := expand("${"+e.env+"}", d.env)
		d.src.refs[e.key] = []string{e.env}
		d.src.raw[e.key] = "${" + e.env + "}"
		if f.Type() == secretType {
			f.Set(reflect.ValueOf(NewSecret(val)))
		} else {
			f.SetString(val)
		}
	}
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// ParseDuration parses a Go duration with an optional leading whole-days
// part: "90s", "1h30m", "7d", "1d12h".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, 'd'); i > 0 {
		days, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		const maxDays = int64(1<<63-1) / int64(24*time.Hour)
		if int64(days) > maxDays {
			return 0, fmt.Errorf("invalid duration %q: too long", s)
		}
		total := time.Duration(days) * 24 * time.Hour
		if rest := s[i+1:]; rest != "" {
			r, err := time.ParseDuration(rest)
			if err != nil || r < 0 {
				return 0, fmt.Errorf("invalid duration %q", s)
			}
			if total+r < total {
				return 0, fmt.Errorf("invalid duration %q: too long", s)
			}
			total += r
		}
		return total, nil
	}
	return time.ParseDuration(s)
}

// FormatDuration renders d in the shortest Go form ParseDuration reads back:
// 2m, 4h, 1h30m, 1.5s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// suggest returns the candidate closest to s when it is close enough.
func suggest(s string, candidates []string) string {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		dist := osaDistance(ls, c)
		if bestD < 0 || dist < bestD {
			best, bestD = c, dist
		}
	}
	limit := 2
	if l := len([]rune(s)); l > 8 {
		limit = l / 3
	}
	if bestD >= 0 && bestD <= limit {
		return best
	}
	return ""
}

// osaDistance is the optimal string alignment distance (Levenshtein plus
// transpositions of adjacent characters).
func osaDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 20
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
