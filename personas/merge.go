package personas

import "sort"

// WithBuiltins returns a Set holding the embedded built-in personas
// (assistant, reporter, buddy) and every persona of s, where a persona of s
// overrides the built-in of the same name. So the built-ins always resolve
// by name, whatever the personas directory holds, and a file named
// assistant.md replaces the built-in assistant. The default choice of s
// (WithDefault) is kept.
func WithBuiltins(s *Set) *Set {
	out := Builtin()
	if s == nil {
		return out
	}
	for _, n := range s.names {
		if _, ok := out.byName[n]; !ok {
			out.names = append(out.names, n)
		}
		out.byName[n] = s.byName[n]
	}
	sort.Strings(out.names)
	out.def = s.def
	return out
}
