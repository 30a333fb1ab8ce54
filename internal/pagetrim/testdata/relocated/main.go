// Command relocated hands its pages back (pagetrim.Release) and then runs
// code that reads relocated data: a position-independent build keeps its
// type and interface tables in RELRO pages the dynamic loader wrote before
// making them read-only. It prints "ok" if it survives.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/switchboard-bot/switchboard/internal/pagetrim"
)

type note struct {
	Text string         `json:"text"`
	Tags map[string]int `json:"tags"`
}

func main() {
	if _, err := pagetrim.Release(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	runtime.GC()
	var v any = note{Text: "hello", Tags: map[string]int{"a": 1}}
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("%s %v ok\n", b, v)
}
