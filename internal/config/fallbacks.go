package config

import "fmt"

// fallbacks checks llm.fallbacks: every entry names an endpoint or a model
// (or both), its base_url is an http(s) URL, and no entry repeats llm itself
// or an earlier entry (it would only pay the same failure twice).
func (v *validator) fallbacks() {
	l := v.c.LLM
	type ep struct{ url, model string }
	seen := map[ep]string{{l.BaseURL, l.Model}: "llm"}
	for i, f := range l.Fallbacks {
		key := fmt.Sprintf("llm.fallbacks[%d]", i)
		if f.BaseURL == "" && f.Model == "" {
			v.fail(key, "needs base_url or model (another endpoint, another model, or both)")
			continue
		}
		v.httpURL(key+".base_url", f.BaseURL)
		e := ep{f.BaseURL, f.Model}
		if e.url == "" {
			e.url = l.BaseURL
		}
		if e.model == "" {
			e.model = l.Model
		}
		if first, dup := seen[e]; dup {
			v.fail(key, "is the same endpoint and model as %s: a fallback must differ in base_url or model", first)
			continue
		}
		seen[e] = key
	}
}
