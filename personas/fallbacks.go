package personas

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Fallback is one entry of a persona's fallbacks: a model to ask when the
// endpoint before it fails with a transient error (refused connection,
// timeout, 5xx, 429). BaseURL "" is llm.base_url. Persona files hold no
// keys: an endpoint is asked with the key config.yaml gives the same base
// URL (llm.api_key or an llm.fallbacks entry's), or none.
type Fallback struct {
	BaseURL string
	Model   string
}

// parseFallbacks reads `fallbacks:` — a list whose items are a model name
// (`gpt-4o-mini`, asked of llm.base_url) or a mapping `{base_url, model}`.
// An empty list means no fallbacks for this persona (not even llm.fallbacks).
func parseFallbacks(v *yaml.Node) ([]Fallback, error) {
	bad := func(n *yaml.Node, format string, a ...any) error {
		return &frontError{line: n.Line, msg: "fallbacks: " + fmt.Sprintf(format, a...)}
	}
	if v.Kind != yaml.SequenceNode {
		return nil, bad(v, "expected a list of models such as [gpt-4o-mini] or of {base_url, model}, got %s", kindName(v))
	}
	out := make([]Fallback, 0, len(v.Content))
	for _, it := range v.Content {
		var f Fallback
		switch it.Kind {
		case yaml.ScalarNode:
			f.Model = strings.TrimSpace(it.Value)
		case yaml.MappingNode:
			for i := 0; i+1 < len(it.Content); i += 2 {
				k, val := it.Content[i], it.Content[i+1]
				if val.Kind != yaml.ScalarNode {
					return nil, bad(val, "%s: expected text, got %s", k.Value, kindName(val))
				}
				switch k.Value {
				case "base_url":
					f.BaseURL = strings.TrimSpace(val.Value)
				case "model":
					f.Model = strings.TrimSpace(val.Value)
				case "api_key":
					return nil, bad(k, "api_key does not belong in a persona file: keys stay in config.yaml (llm.fallbacks), where the same base_url finds its key")
				default:
					return nil, bad(k, "unknown key %q (known keys: base_url, model)", truncate(k.Value, 60))
				}
			}
		default:
			return nil, bad(it, "expected a model name or {base_url, model}, got %s", kindName(it))
		}
		switch {
		case f.Model == "" && f.BaseURL == "":
			return nil, bad(it, "an entry needs a model or a base_url")
		case strings.ContainsAny(f.Model, "\n\r") || len(f.Model) > 200:
			return nil, bad(it, "model must be a single line of at most 200 characters")
		}
		if f.BaseURL != "" {
			if u, err := url.Parse(f.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, bad(it, "base_url %q is not an http(s) URL such as http://127.0.0.1:11434/v1", truncate(f.BaseURL, 60))
			} else if u.User != nil {
				return nil, bad(it, "base_url must not carry credentials: keys stay in config.yaml")
			}
		}
		if slices.Contains(out, f) {
			return nil, bad(it, "%s is listed twice", f)
		}
		out = append(out, f)
	}
	return out, nil
}

func (f Fallback) String() string {
	if f.BaseURL == "" {
		return fmt.Sprintf("%q", f.Model)
	}
	return fmt.Sprintf("{base_url: %s, model: %q}", f.BaseURL, f.Model)
}

// fallbacksNode renders fallbacks for Format (nil = absent).
func fallbacksNode(list []Fallback) *yaml.Node {
	if list == nil {
		return nil
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	for _, f := range list {
		if f.BaseURL == "" {
			seq.Content = append(seq.Content, str(f.Model))
			continue
		}
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		m.Content = append(m.Content, str("base_url"), str(f.BaseURL))
		if f.Model != "" {
			m.Content = append(m.Content, str("model"), str(f.Model))
		}
		seq.Content = append(seq.Content, m)
	}
	return seq
}
