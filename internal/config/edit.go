package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/config/yamledit"
)

// SetInFile sets the dotted key in the YAML file at path to value and
// writes the file back, keeping comments, key order and (where the edit can
// be made textually) every other byte. value is read as a YAML scalar or
// flow collection ("42", "true", "5m", "[a, b]", "{name: x, …}"); for
// string keys a value that is not itself a quoted YAML scalar is taken
// literally. The edited file must load (Parse with the process environment)
// or nothing is written. The write is atomic and keeps the file's mode; a
// missing file is created (mode 0600).
func SetInFile(path, key, value string) error {
	return editFile(path, key, os.LookupEnv, false, func(e *yamledit.Editor) error { return e.Set(value) })
}

// UnsetInFile removes the dotted key from the file at path, so it falls back
// to its default, with the same guarantees as SetInFile. Removing a key that
// is not in the file is not an error and leaves the file untouched. A job is
// removed with "jobs.<name>" (or "jobs.<index>").
func UnsetInFile(path, key string) error {
	return editFile(path, key, os.LookupEnv, true, (*yamledit.Editor).Unset)
}

// EditText returns the file at path before and after setting key to value
// (unset: removing it), without writing anything and without loading the
// result: for an editor that has the result checked elsewhere (`config set`
// asks the running daemon, which loads it in its own environment; see
// WriteVerified). The file must parse as YAML and the key must be in the
// schema (or, to unset, in the file). An edit that changes nothing returns
// after equal to before.
func EditText(path, key, value string, unset bool) (before, after []byte, err error) {
	before, err = ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	op := func(e *yamledit.Editor) error { return e.Set(value) }
	if unset {
		op = (*yamledit.Editor).Unset
	}
	after, err = editData(path, before, key, unset, op)
	return before, after, err
}

// editFile runs op on the file. removing allows a key unknown to the schema
// when it is present in the file (so `config unset llm.modle` fixes a typo).
func editFile(path, key string, env EnvFunc, removing bool, op func(*yamledit.Editor) error) error {
	real := path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		real = p
	}
	mode := fs.FileMode(0o600)
	data, err := readFile(real)
	switch {
	case err == nil:
		if st, serr := os.Stat(real); serr == nil {
			mode = st.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	default:
		return fmt.Errorf("config: read %s: %w", path, err)
	}
	out, err := editData(path, data, key, removing, op)
	if err != nil || bytes.Equal(out, data) {
		return err
	}
	if _, err := Parse(path, out, env); err != nil {
		return fmt.Errorf("config: refusing to change %s (the file is unchanged): %w", key, err)
	}
	if err := yamledit.WriteAtomic(real, out, mode); err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	return nil
}

// editData runs op on data, the file at path, and returns the edited text
// (data itself when op changes nothing).
func editData(path string, data []byte, key string, removing bool, op func(*yamledit.Editor) error) ([]byte, error) {
	segs, leaf, err := schemaPath(key)
	if err != nil {
		// An unknown key can still be removed when it is in the file (the
		// way to fix a typo from the CLI); otherwise report the schema error.
		if !removing || !yamledit.HasKey(data, key) {
			return nil, fmt.Errorf("config: %s: %w", key, err)
		}
		segs, leaf = nil, reflect.TypeFor[string]()
		for _, p := range strings.Split(key, ".") {
			segs = append(segs, seg{kind: segField, name: p})
		}
	}
	e, err := newEditor(displayName(path), data, segs, leaf, key)
	if err != nil {
		return nil, err
	}
	if err := op(e); err != nil {
		if errors.Is(err, yamledit.ErrNoChange) {
			return data, nil
		}
		return nil, fmt.Errorf("config: %s: %w", key, err)
	}
	out, err := e.Result()
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", key, err)
	}
	return out, nil
}

// newEditor checks data as config.yaml (errors name file and line) and
// returns the yamledit editor of the key at segs.
func newEditor(file string, data []byte, segs []seg, leaf reflect.Type, key string) (*yamledit.Editor, error) {
	if _, err := parseYAML(file, data); err != nil {
		return nil, err
	}
	path := make([]yamledit.Seg, len(segs))
	for i, s := range segs {
		path[i] = yamledit.Seg{Kind: editKinds[s.kind], Name: s.name}
	}
	e, err := yamledit.New(data, path, key, leaf.Kind() == reflect.String || leaf == secretType)
	if err != nil {
		return nil, yamlError(file, data, err)
	}
	return e, nil
}

// editKinds maps the schema's segment kinds to the editor's.
var editKinds = map[segKind]yamledit.SegKind{segField: yamledit.Field, segMapKey: yamledit.MapKey, segItem: yamledit.Item}
