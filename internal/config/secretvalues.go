package config

import (
	"reflect"
	"slices"
)

// SecretValues returns the value of every Secret the configuration holds —
// every key of the schema, every platform's section, MCP env and headers,
// fallbacks — set ones only, each once, longest first: what a caller that
// shows text the daemon produced (the console's Logs page) scrubs from it.
func (c *Config) SecretValues() []string {
	if c == nil {
		return nil
	}
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		if v.Type() == secretType {
			if s := v.Interface().(Secret).Value(); s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(c).Elem())
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
