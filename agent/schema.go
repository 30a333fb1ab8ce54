package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool argument schemas are compiled and checked with google/jsonschema-go
// (draft 2020-12 and draft-07), the library the MCP SDK already links.
// santhosh-tekuri/jsonschema, used before, compiled the meta-schemas of five
// drafts in its package initialization: ~1.7 MB allocated and ~1.5 MiB of
// resident memory kept by every process, idle or not, and ~11 ms of start-up.
//
// A schema that names another draft ("$schema" of draft-04, -06 or 2019-09,
// as some MCP servers send) is checked by the 2020-12 rules, which agree with
// those drafts on the keywords tool schemas use (type, properties, required,
// enum, items, bounds); a keyword whose form differs (draft-04's boolean
// exclusiveMaximum) makes the schema fail to compile, and the tool is refused
// at registration with that reason.

// compileSchema compiles a tool's JSON Schema. External $refs are refused:
// schemas must be self-contained.
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema does not compile: %w", err)
	}
	switch s.Schema {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
	default:
		s.Schema = "" // another draft: checked by the 2020-12 rules (see above)
	}
	res, err := s.Resolve(&jsonschema.ResolveOptions{Loader: func(u *url.URL) (*jsonschema.Schema, error) {
		return nil, fmt.Errorf("external schema reference %q is not allowed", u.Redacted())
	}})
	if err != nil {
		return nil, fmt.Errorf("schema does not compile: %w", err)
	}
	return res, nil
}

// validateArgs checks a tool call's arguments against its compiled schema;
// the error text is meant for the model.
func validateArgs(sch *jsonschema.Resolved, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, isObj := inst.(map[string]any); !isObj {
		return errors.New("arguments must be a JSON object")
	}
	if err := sch.Validate(inst); err != nil {
		// "validating root: validating /properties/url: type: …": the
		// "validating …:" path prefix is noise for the model; keep the
		// location and the reason.
		return fmt.Errorf("arguments do not match the schema: %s", elideLongWords(schemaMessage(err), maxQuotedWord))
	}
	return nil
}

// schemaMessage shortens a jsonschema-go validation error to its innermost
// location and reason.
func schemaMessage(err error) string {
	msg := err.Error()
	where := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		loc, tail, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if loc != "root" {
			where = loc
		}
		msg = tail
	}
	if where != "" {
		return where + ": " + msg
	}
	return msg
}

// maxQuotedWord bounds one word of a validation error: the library quotes
// the offending value (a 20,000-character path against maxLength, a huge
// enum value or property name) whole.
const maxQuotedWord = 120

// elideLongWords shortens every space-separated word of msg longer than max
// runes to its head and tail around "…(N characters)…", so the reason that
// follows the value stays readable. The caller bounds the whole message too.
func elideLongWords(msg string, max int) string {
	words := strings.Split(msg, " ")
	for i, w := range words {
		if n := utf8.RuneCountInString(w); n > max {
			r := []rune(w)
			words[i] = fmt.Sprintf("%s…(%d characters)…%s", string(r[:max/2]), n, string(r[n-max/4:]))
		}
	}
	return strings.Join(words, " ")
}
