package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

type dynTool struct{ name string }

func (d dynTool) Name() string                                          { return d.name }
func (d dynTool) Description() string                                   { return "" }
func (d dynTool) Schema() json.RawMessage                               { return nil }
func (d dynTool) Call(context.Context, json.RawMessage) (string, error) { return "", nil }

// A tool that stays across a Replace (an MCP tool list refresh) is never
// missing to a concurrent lookup.
func TestRegistryReplaceKeepsToolsVisible(t *testing.T) {
	r := NewRegistry()
	if _, errs := r.Replace(nil, []Tool{dynTool{"s__a"}, dynTool{"s__b"}}); errs != nil {
		t.Fatal(errs)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				r.Replace([]string{"s__a", "s__b"}, []Tool{dynTool{"s__a"}, dynTool{"s__b"}})
			}
		}
	})
	for range 20000 {
		if _, ok := r.Get("s__a"); !ok {
			close(stop)
			wg.Wait()
			t.Fatal("s__a was missing during a Replace")
		}
	}
	close(stop)
	wg.Wait()
	added, errs := r.Replace([]string{"s__a", "s__b"}, []Tool{dynTool{"s__b"}, dynTool{"bad name"}})
	if len(added) != 1 || added[0] != "s__b" || len(errs) != 1 {
		t.Fatalf("added %v errs %v", added, errs)
	}
	if _, ok := r.Get("s__a"); ok {
		t.Fatal("s__a not removed")
	}
}

func TestAllowedByGlobs(t *testing.T) {
	for _, tc := range []struct {
		list []string
		name string
		want bool
	}{
		{[]string{"github__*"}, "github__create_issue", true},
		{[]string{"github__*"}, "gitlab__x", false},
		{[]string{"current_time"}, "current_time", true},
		{[]string{"web_*"}, "web_fetch", true},
		{[]string{"[bad"}, "[bad", true},
		{[]string{}, "x", false},
	} {
		if got := AllowedBy(tc.list, tc.name); got != tc.want {
			t.Errorf("AllowedBy(%v, %q) = %v", tc.list, tc.name, got)
		}
	}
}
