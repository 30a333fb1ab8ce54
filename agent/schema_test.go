package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValidateArgs: what the model is told when its arguments miss the
// schema says where and why; schemas of other drafts still validate.
func TestValidateArgs(t *testing.T) {
	const fetch = `{"type":"object","properties":{"url":{"type":"string","minLength":1},
		"method":{"type":"string","enum":["GET","HEAD"]},"n":{"type":"integer","maximum":5}},
		"required":["url"],"additionalProperties":false}`
	cases := []struct {
		name, schema, args string
		want               []string // substrings of the error; none = valid
	}{
		{"valid", fetch, `{"url":"https://x/","n":3}`, nil},
		{"empty args are an empty object", `{"type":"object"}`, ``, nil},
		{"missing required", fetch, `{}`, []string{"arguments do not match the schema", "url"}},
		{"wrong type", fetch, `{"url":7}`, []string{"/properties/url", "string"}},
		{"not in enum", fetch, `{"url":"x","method":"POST"}`, []string{"/properties/method", "POST"}},
		{"above maximum", fetch, `{"url":"x","n":9}`, []string{"/properties/n", "9"}},
		{"not an integer", fetch, `{"url":"x","n":1.5}`, []string{"/properties/n"}},
		{"unknown property", fetch, `{"url":"x","body":"a"}`, []string{"body"}},
		{"not an object", fetch, `[1]`, []string{"must be a JSON object"}},
		{"not JSON", fetch, `{"url":`, []string{"not valid JSON"}},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["q"]}`, `{}`, []string{"q"}},
		{"draft-04 read as 2020-12", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, `{"q":1}`, []string{"/properties/q"}},
		{"draft-04 valid", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","required":["q"]}`, `{"q":"x"}`, nil},
		{"local $ref", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, `{"a":1}`, []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sch, err := compileSchema(json.RawMessage(c.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = validateArgs(sch, json.RawMessage(c.args))
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("valid arguments refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid arguments accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "validating root") {
				t.Errorf("error keeps the library's path noise: %q", err)
			}
		})
	}
}
