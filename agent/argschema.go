package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// MustArgsSchema returns the JSON Schema of a tool's argument struct T, for
// Tool.Schema. The struct the tool decodes its arguments into is the one
// definition: the schema is generated from it by jsonschema.For, so a field
// added, renamed or removed changes what the model is shown.
//
//   - one property per exported field, named by its json tag, its type from
//     the field's Go type (string, integer, number, boolean, array, object);
//   - the field's `jsonschema:"..."` tag is the property's description (it
//     must not start with "WORD=");
//   - a field without omitempty (or omitzero) in its json tag is required;
//   - no other property is allowed (additionalProperties false).
//
// refine, if not nil, adds what a struct tag cannot say to the generated
// properties, by name: enums, bounds (minimum, maximum, minLength,
// maxLength), a limit known only at run time. It must not add or remove
// properties.
//
// MustArgsSchema panics if T cannot be described as a JSON object or refine
// adds or removes a property (or names one T lacks): programming errors,
// caught the first time the tool's schema is built (a tool's tests do).
func MustArgsSchema[T any](refine func(props map[string]*jsonschema.Schema)) json.RawMessage {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("agent: argument schema: %v", err))
	}
	if s.Type != "object" {
		panic(fmt.Sprintf("agent: argument schema of %T: the arguments must be a struct, not %s", *new(T), s.Type))
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{} // a struct without fields: "properties": {}
	}
	if refine != nil {
		before := slices.Sorted(maps.Keys(s.Properties))
		refine(s.Properties)
		after := slices.Sorted(maps.Keys(s.Properties))
		if !slices.Equal(before, after) {
			panic(fmt.Sprintf("agent: argument schema of %T: refine changed the properties from %v to %v; declare them as struct fields", *new(T), before, after))
		}
		for name, p := range s.Properties {
			if p == nil {
				panic(fmt.Sprintf("agent: argument schema of %T: refine removed the schema of %q", *new(T), name))
			}
		}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("agent: argument schema of %T: %v", *new(T), err))
	}
	return raw
}
