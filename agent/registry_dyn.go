package agent

import (
	"fmt"
	"path"
)

// Unregister removes the tool named name, if registered (tools that come
// and go at run time: an MCP server's tools on reload or list change).
func (r *Registry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tools, name)
}

// AllowedBy reports whether an allowlist admits the tool named name: an
// entry is a tool name or a glob (path.Match syntax: github__*, web_*).
func AllowedBy(list []string, name string) bool {
	for _, pat := range list {
		if pat == name {
			return true
		}
		if ok, err := path.Match(pat, name); err == nil && ok {
			return true
		}
	}
	return false
}

// Replace atomically removes the tools named in old and registers tools
// (each checked as Register does), so a tool that stays in the set is never
// missing, not even for a moment, to a concurrent turn. It returns the tools
// it registered and the errors of those it could not.
func (r *Registry) Replace(old []string, tools []Tool) (added []string, errs []error) {
	tmp := NewRegistry()
	for _, t := range tools {
		if err := tmp.Register(t); err != nil {
			errs = append(errs, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range old {
		delete(r.tools, name)
	}
	for _, name := range tmp.Names() {
		if _, dup := r.tools[name]; dup {
			errs = append(errs, fmt.Errorf("agent: register tool %q: already registered", name))
			continue
		}
		r.tools[name] = tmp.tools[name]
		added = append(added, name)
	}
	return added, errs
}
