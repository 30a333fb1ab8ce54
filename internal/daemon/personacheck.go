package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/opfile"
	"github.com/switchboard-bot/switchboard/personas"
)

// LoadPersonaSet reads the persona files of dir on top of the embedded
// built-ins (a file overrides the built-in of its name, so assistant,
// reporter and buddy always resolve) and checks every persona name the
// config refers to and every tool a persona file lists. skipped holds the
// malformed files (file:line; they are left out, the others load); problems
// is nil or the joined reference errors, each with file:line and a "did you
// mean": the config must not start (or be reloaded) with them, because a
// chat would silently get another persona or no tools. A missing dir is not
// an error (the built-ins serve).
func LoadPersonaSet(cfg *config.Config, dir string) (set *personas.Set, skipped []error, problems error) {
	set, errs := personas.Load(dir)
	for _, err := range errs {
		if errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "read directory") {
			continue
		}
		skipped = append(skipped, err)
	}
	set = personas.WithBuiltins(set)
	return set, skipped, CheckPersonas(cfg, set)
}

// CheckPersonas reports the persona names in cfg that set does not hold
// (personas.default, personas.by_target, personas.by_channel, jobs[].persona)
// and the tools persona files list that are not built-in tools.
func CheckPersonas(cfg *config.Config, set *personas.Set) error {
	var errs []error
	names := set.Names()
	check := func(key, name string) {
		if name != "" && !set.Has(name) {
			errs = append(errs, cfg.ErrorAt(key, "%s", config.UnknownName("persona", name, names)))
		}
	}
	p := cfg.Personas
	check("personas.default", p.Default)
	for _, t := range sortedKeys(p.ByTarget) {
		check("personas.by_target."+t, p.ByTarget[t])
	}
	for _, ch := range sortedKeys(p.ByChannel) {
		check("personas.by_channel."+ch, p.ByChannel[ch])
	}
	for i, j := range cfg.Jobs {
		check(fmt.Sprintf("jobs[%d].persona", i), j.Persona)
	}
	for _, n := range names {
		per, _ := set.Get(n)
		for _, t := range per.Tools {
			if msg := cfg.ToolNameProblem(t); msg != "" {
				errs = append(errs, &config.Error{File: per.File, Line: toolLine(per.File, t), Key: "tools",
					Msg: "tools: " + msg})
			}
		}
	}
	return errors.Join(errs...)
}

// toolLine finds the line of a persona file's front matter that lists tool
// (0 when the file cannot be read, e.g. an embedded built-in). The file is
// read as the loader reads it (internal/opfile: regular, non-blocking,
// bounded), since it may have changed since.
func toolLine(file, tool string) int {
	data, err := opfile.ReadFile(file, personas.MaxFileSize)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan() && n < 200; n++ {
		line := sc.Text()
		if n > 1 && strings.TrimSpace(line) == "---" {
			return 0
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t,[]-:\"'", r) }) {
			if f == tool {
				return n
			}
		}
	}
	return 0
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
