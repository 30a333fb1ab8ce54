package main

// Issue 28 item 7: --json on the listing commands prints one JSON document
// on stdout with the documented snake_case fields, through the built binary,
// with the daemon running and without it; secrets never appear.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/internal/cluster"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/pgtest"
)

// decodeOne decodes stdout as exactly one JSON object and returns it.
func decodeOne(t *testing.T, r result) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON document (%v)\nstdout: %s", err, r.stdout)
	}
	return doc
}

// keys are the top-level field names of doc, sorted.
func keys(doc map[string]any) []string {
	var out []string
	for k := range doc {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// list is doc[field] as a JSON array (failing on null or another type).
func list(t *testing.T, doc map[string]any, field string) []any {
	t.Helper()
	l, ok := doc[field].([]any)
	if !ok {
		t.Fatalf("%q is %T (%v), want an array", field, doc[field], doc[field])
	}
	return l
}

func jsonConfig(t *testing.T, llmURL, addr string) string {
	return writeConfig(t, fmt.Sprintf(`bot:
  data_dir: ./data
llm:
  base_url: %s
  api_key: ${SB_E2E_KEY}
channels:
  console:
    enabled: false
personas:
  dir: ./personas
jobs:
  - name: standup
    schedule: "0 9 * * 1-5"
    kind: reminder
    text: Stand-up in 5 minutes
    deliver_to: ["telegram:42"]
server:
  listen: %s
`, llmURL, addr))
}

type jsonCase struct {
	name  string
	args  []string
	keys  []string // the top-level fields, sorted
	check func(t *testing.T, doc map[string]any)
}

// The listings both with the daemon running and without it.
var storeJSONCases = []jsonCase{
	{"jobs list", []string{"jobs", "list", "--json"}, []string{"jobs"}, func(t *testing.T, doc map[string]any) {
		jobs := list(t, doc, "jobs")
		if len(jobs) != 1 {
			t.Fatalf("jobs: %v", jobs)
		}
		j := jobs[0].(map[string]any)
		if j["name"] != "standup" || j["kind"] != "reminder" || j["schedule"] != "0 9 * * 1-5" {
			t.Errorf("job: %v", j)
		}
		if next, _ := j["next"].(string); next == "" {
			t.Errorf("job next run: %v", j["next"])
		} else if _, err := time.Parse(time.RFC3339, next); err != nil {
			t.Errorf("job next run %q: %v", next, err)
		}
	}},
	{"sessions list", []string{"sessions", "list", "--json"}, []string{"sessions"}, func(t *testing.T, doc map[string]any) {
		s := list(t, doc, "sessions")
		if len(s) != 1 {
			t.Fatalf("sessions: %v", s)
		}
		m := s[0].(map[string]any)
		if m["key"] != "cli:ask" || m["turns"] != 1.0 {
			t.Errorf("session: %v", m)
		}
		if _, ok := m["usage"].(map[string]any)["total_tokens"]; !ok {
			t.Errorf("session usage: %v", m["usage"])
		}
	}},
	{"pairing list", []string{"pairing", "list", "--json"}, []string{"requests"}, func(t *testing.T, doc map[string]any) {
		if r := list(t, doc, "requests"); len(r) != 0 {
			t.Errorf("requests: %v", r)
		}
	}},
	{"audit", []string{"audit", "--json"}, []string{"records"}, func(t *testing.T, doc map[string]any) {
		list(t, doc, "records")
	}},
}

func TestBinaryJSONOutput(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	addr := freePort(t)
	cfg := jsonConfig(t, llm.URL, addr)
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	if r := runBin(t, env, "--config", cfg, "ask", "hello"); r.code != 0 {
		t.Fatalf("ask: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	run := func(t *testing.T, cases []jsonCase) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := runBin(t, env, append([]string{"--config", cfg}, tc.args...)...)
				if r.code != 0 {
					t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
				}
				noSecret(t, r, e2eKey)
				doc := decodeOne(t, r)
				if got := keys(doc); !slices.Equal(got, tc.keys) {
					t.Fatalf("top-level fields %v, want %v\n%s", got, tc.keys, r.stdout)
				}
				tc.check(t, doc)
			})
		}
	}

	t.Run("offline", func(t *testing.T) {
		run(t, append(slices.Clone(storeJSONCases), jsonCase{"mcp list", []string{"mcp", "list", "--json"}, []string{"servers", "source"},
			func(t *testing.T, doc map[string]any) {
				if doc["source"] != "probe" || len(list(t, doc, "servers")) != 0 {
					t.Errorf("mcp: %v", doc)
				}
			}}))
	})

	startDaemonBin(t, env, cfg, addr)
	t.Run("daemon", func(t *testing.T) {
		run(t, append(slices.Clone(storeJSONCases),
			jsonCase{"mcp list", []string{"mcp", "list", "--json"}, []string{"servers", "source"},
				func(t *testing.T, doc map[string]any) {
					if doc["source"] != "daemon" || len(list(t, doc, "servers")) != 0 {
						t.Errorf("mcp: %v", doc)
					}
				}},
			jsonCase{"status", []string{"status", "--json"},
				[]string{"bot", "channels", "deliveries", "messages", "model", "sessions", "storage", "tasks", "turns"},
				func(t *testing.T, doc map[string]any) {
					model := doc["model"].(map[string]any)
					if model["api_key_set"] != true || model["endpoint"] != llm.URL {
						t.Errorf("model: %v", model)
					}
					st := doc["storage"].(map[string]any)
					if st["backend"] != "bolt" || st["ok"] != true || st["writes_ok"] != true {
						t.Errorf("storage: %v", st)
					}
					if doc["sessions"] != 1.0 || doc["bot"] == "" {
						t.Errorf("sessions %v, bot %v", doc["sessions"], doc["bot"])
					}
					if _, ok := doc["turns"].(map[string]any)["queued_messages"]; !ok {
						t.Errorf("turns: %v", doc["turns"])
					}
					list(t, doc, "channels")
				}}))
	})
}

// status --json with no daemon: the exit code and the message of today,
// nothing on stdout.
func TestBinaryStatusJSONDaemonStopped(t *testing.T) {
	cfg := jsonConfig(t, "http://127.0.0.1:9", freePort(t))
	want := runBin(t, cleanEnv(), "--config", cfg, "status")
	r := runBin(t, cleanEnv(), "--config", cfg, "status", "--json")
	if r.code != want.code || r.code == 0 || r.stdout != "" {
		t.Fatalf("status --json: exit %d (text: %d)\nstdout: %q\nstderr: %s", r.code, want.code, r.stdout, r.stderr)
	}
}

// doctor --json prints the checks as JSON and keeps its exit code: 1 when a
// check fails (here the model endpoint does not answer); the key never
// appears.
func TestBinaryDoctorJSON(t *testing.T) {
	cfg := jsonConfig(t, "http://127.0.0.1:9/v1", freePort(t))
	env := cleanEnv("SB_E2E_KEY=" + e2eKey)
	text := runBin(t, env, "--config", cfg, "doctor")
	r := runBin(t, env, "--config", cfg, "doctor", "--json")
	noSecret(t, r, e2eKey)
	if r.code != text.code || r.code != 1 {
		t.Fatalf("doctor --json: exit %d, text exit %d\nstdout: %s\nstderr: %s", r.code, text.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "using config") {
		t.Errorf("the config notice is not on stderr: %q", r.stderr)
	}
	doc := decodeOne(t, r)
	if got, want := keys(doc), []string{"checks", "config", "ok", "summary", "time"}; !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	if doc["ok"] != false || doc["config"] != cfg {
		t.Errorf("ok %v, config %v", doc["ok"], doc["config"])
	}
	var failed []string
	for _, c := range list(t, doc, "checks") {
		m := c.(map[string]any)
		if m["status"] == "fail" {
			failed = append(failed, m["name"].(string))
		}
	}
	if !slices.Contains(failed, "model endpoint") {
		t.Errorf("failed checks %v lack the model endpoint\n%s", failed, r.stdout)
	}
	if s := doc["summary"].(map[string]any); s["fail"] != float64(len(failed)) {
		t.Errorf("summary %v, failed %v", s, failed)
	}
}

// cluster status --json: the replicas, leases and inbox backlog as fields.
func TestBinaryClusterStatusJSON(t *testing.T) {
	url := pgtest.Start(t)
	c, err := cluster.Open(t.Context(), url, cluster.Options{ReplicaID: "replica-a", LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, err := c.TryAcquire(t.Context(), "telegram-poll"); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	body := "bot: {data_dir: " + dir + "}\nstorage:\n  backend: postgres\n  postgres: {url: \"" + url + "\"}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, cleanEnv(), "--config", path, "cluster", "status", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	doc := decodeOne(t, r)
	want := []string{"alive_replicas", "inbox_backlog", "lease_ttl_seconds", "leases", "now", "replicas", "sessions_claimed"}
	if got := keys(doc); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v\n%s", got, want, r.stdout)
	}
	reps := list(t, doc, "replicas")
	if len(reps) != 1 || reps[0].(map[string]any)["id"] != "replica-a" || reps[0].(map[string]any)["alive"] != true {
		t.Errorf("replicas: %v", reps)
	}
	leases := list(t, doc, "leases")
	if len(leases) != 1 || leases[0].(map[string]any)["holder"] != "replica-a" || leases[0].(map[string]any)["token"] != 1.0 {
		t.Errorf("leases: %v", leases)
	}
	if doc["inbox_backlog"] != 0.0 || doc["alive_replicas"] != 1.0 {
		t.Errorf("backlog %v, alive %v", doc["inbox_backlog"], doc["alive_replicas"])
	}
	if strings.Contains(r.stdout, url) {
		t.Error("the database URL appears in the output")
	}
}

// Stored text a stranger wrote reaches stdout with the controls a terminal
// acts on escaped: C0 by encoding/json, DEL and C1 by writeJSON.
func TestWriteJSONEscapesControls(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out}
	in := "a\x1b]52;c;x\x07b\x7fc\u009b2Jd<e>&é"
	if err := a.writeJSON(map[string]string{"name": in}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"\x1b", "\x07", "\x7f", "\u009b"} {
		if strings.Contains(out.String(), c) {
			t.Errorf("%q reaches stdout: %q", c, out.String())
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["name"] != in {
		t.Fatalf("round trip: %v %q\n%s", err, back["name"], out.String())
	}
	if !strings.Contains(out.String(), "<e>&é") {
		t.Errorf("HTML or UTF-8 escaped needlessly: %s", out.String())
	}
}
