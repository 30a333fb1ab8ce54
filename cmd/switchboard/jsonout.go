package main

// --json on the listing commands (status, jobs list, sessions list, pairing
// list, audit, mcp list, cluster status, doctor): one JSON document on
// stdout, snake_case fields (README, "Machine-readable output"), notices on
// stderr as without --json, exit codes unchanged.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/agent/mcp"
	"github.com/switchboard-bot/switchboard/channels/hub"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/doctor"
	"github.com/switchboard-bot/switchboard/memory"
)

// addJSONFlag adds --json to cmd, setting *on.
func addJSONFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, "json", false, "print one JSON document instead of the table (fields: README, Machine-readable output)")
}

// writeJSON prints v on stdout as one indented JSON document. Stored text
// (names, messages, errors strangers and models wrote) is escaped where a
// terminal would act on it: besides the C0 controls encoding/json escapes,
// DEL and the C1 controls become \u escapes too (see termSafe).
func (a *app) writeJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode the JSON output: %w", err)
	}
	out := make([]byte, 0, buf.Len())
	for _, r := range buf.String() { // the encoder's output is valid UTF-8
		if r == 0x7f || r >= 0x80 && r <= 0x9f {
			out = fmt.Appendf(out, `\u%04x`, r)
			continue
		}
		out = append(out, string(r)...)
	}
	_, err := a.stdout.Write(out)
	return err
}

// jobJSON is one job of `jobs list --json`.
type jobJSON struct {
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	Source     string     `json:"source"`
	Schedule   string     `json:"schedule"`
	Next       *time.Time `json:"next"` // null: not scheduled
	LastStatus string     `json:"last_status"`
	State      string     `json:"state"`
}

type jobsJSON struct {
	Jobs []jobJSON `json:"jobs"`
}

func jobsDoc(rows []daemon.JobRow) jobsJSON {
	doc := jobsJSON{Jobs: make([]jobJSON, 0, len(rows))}
	for _, r := range rows {
		j := jobJSON{Name: r.Name, Kind: r.Kind, Source: r.Source, Schedule: r.Schedule, LastStatus: r.LastStatus, State: r.State}
		if !r.Next.IsZero() {
			next := r.Next
			j.Next = &next
		}
		doc.Jobs = append(doc.Jobs, j)
	}
	return doc
}

type sessionsJSON struct {
	Sessions []memory.SessionMeta `json:"sessions"`
}

type pairingJSON struct {
	Requests []hub.PairingRequest `json:"requests"`
}

type auditJSON struct {
	Records []memory.AuditRecord `json:"records"`
}

type mcpJSON struct {
	Source  string             `json:"source"` // "daemon" or "probe"
	Servers []mcp.ServerStatus `json:"servers"`
}

type clusterJSON struct {
	daemon.ClusterReport
	InboxBacklog int `json:"inbox_backlog"`
}

type doctorJSON struct {
	Config  string          `json:"config"`
	Time    time.Time       `json:"time"`
	OK      bool            `json:"ok"` // no check failed
	Summary doctorSummary   `json:"summary"`
	Checks  []doctor.Result `json:"checks"`
}

type doctorSummary struct {
	OK      int `json:"ok"`
	Warn    int `json:"warn"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
}

func doctorDoc(path string, now time.Time, results []doctor.Result) doctorJSON {
	doc := doctorJSON{Config: path, Time: now, OK: !doctor.Broken(results), Checks: results}
	if doc.Checks == nil {
		doc.Checks = []doctor.Result{}
	}
	for _, r := range results {
		switch r.Status {
		case doctor.StatusOK:
			doc.Summary.OK++
		case doctor.StatusWarn:
			doc.Summary.Warn++
		case doctor.StatusFail:
			doc.Summary.Fail++
		default:
			doc.Summary.Skipped++
		}
	}
	return doc
}

// nonNil returns s, or an empty slice for nil (a list is [] in JSON, never null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
