package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/switchboard-bot/switchboard/internal/config"
)

type configData struct {
	Path      string
	Effective string // RedactedYAML of the config in force
	// Whole-file editing: offered when the file writes no secret in plain text.
	FileEditable bool
	Plaintext    []string // "line N: key" of plain-text secrets
	FileText     string
	FileBase     string // hash of the file the editor started from
	Key, Value   string
	KeySecret    bool
	Diff         []diffLine
	Preview      string // "key" | "file": the diff is a preview awaiting Apply
	NoChange     bool
	Error        string
}

func (s *Server) configData() (configData, []byte, error) {
	cfg := s.o.Backend.Config()
	d := configData{Path: cfg.Path}
	y, err := cfg.RedactedYAML()
	if err != nil {
		return d, nil, err
	}
	d.Effective = string(y)
	if cfg.Path == "" {
		return d, nil, nil
	}
	cur, err := config.ReadFile(cfg.Path)
	if err != nil {
		return d, nil, err
	}
	d.Plaintext = config.PlaintextSecrets(cur)
	d.FileEditable = len(d.Plaintext) == 0
	if d.FileEditable {
		d.FileText = string(cur)
	}
	d.FileBase = hashOf(cur)
	return d, cur, nil
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func (s *Server) configPage(w http.ResponseWriter, r *http.Request) {
	d, _, err := s.configData()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Key = r.FormValue("key")
	s.render(w, r, http.StatusOK, "config", d)
}

// configKey previews or applies one key's new value (the `config set` path).
func (s *Server) configKey(w http.ResponseWriter, r *http.Request) {
	d, _, err := s.configData()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	key, value := strings.TrimSpace(r.PostFormValue("key")), r.PostFormValue("value")
	d.Key = key
	d.KeySecret = config.IsSecretKey(key) || mcpSecret(key) || (config.IsURLKey(key) && config.RedactURL(value) != value) ||
		config.ValueHoldsSecret(key, value)
	if !d.KeySecret {
		d.Value = value
	}
	if d.Path == "" {
		d.Error = "The daemon runs without a config file: there is nothing to edit."
		s.render(w, r, http.StatusUnprocessableEntity, "config", d)
		return
	}
	before, after, next, err := config.SetPreview(d.Path, key, value)
	if err == nil {
		err = s.o.Backend.CheckConfig(next)
	}
	if err != nil {
		d.Error = errText(err)
		s.audit(r.Context(), "config.edit", "", "set "+key+" (refused)", clip(500, d.Error))
		s.render(w, r, http.StatusUnprocessableEntity, "config", d)
		return
	}
	if r.PostFormValue("action") != "apply" {
		context := 3
		if !d.FileEditable {
			context = 0 // unchanged lines could be plain-text secrets
		}
		d.Diff, d.Preview, d.NoChange = lineDiff(string(before), string(after), context), "key", string(before) == string(after)
		d.Diff = hideSecrets(d.Diff, config.PlaintextSecretLines(before), config.PlaintextSecretLines(after))
		if d.KeySecret {
			d.Diff = maskDiff(d.Diff)
		}
		s.render(w, r, http.StatusOK, "config", d)
		return
	}
	if err := config.SetInFile(d.Path, key, value); err != nil {
		d.Error = errText(err)
		s.render(w, r, http.StatusUnprocessableEntity, "config", d)
		return
	}
	s.audit(r.Context(), "config.edit", "", "set "+key, "")
	msg := "Set " + key + " in " + d.Path + ". " + s.reload(r)
	if d.KeySecret && value != "" && !strings.Contains(value, "${") {
		msg += " Note: the value is now stored in plain text in the file; prefer a ${ENV} reference."
	}
	s.redirect(w, r, "/ui/config", msg)
}

// configFile previews or applies the whole file.
func (s *Server) configFile(w http.ResponseWriter, r *http.Request) {
	d, cur, err := s.configData()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	text := strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n")
	refuse := func(msg string) {
		d.Error = msg
		if d.FileEditable {
			d.FileText = text
		}
		s.audit(r.Context(), "config.edit", "", "whole file (refused)", clip(500, msg))
		s.render(w, r, http.StatusUnprocessableEntity, "config", d)
	}
	switch {
	case d.Path == "":
		refuse("The daemon runs without a config file: there is nothing to edit.")
		return
	case !d.FileEditable:
		refuse("The file writes secrets in plain text, so it is not shown or edited whole here; edit keys one by one, or move the secrets to ${ENV} references.")
		return
	case len(config.PlaintextSecrets([]byte(text))) > 0:
		refuse("Refused: the new text writes a secret in plain text (" + strings.Join(config.PlaintextSecrets([]byte(text)), ", ") + "); use a ${ENV} reference, or set that key alone.")
		return
	case r.PostFormValue("base") != d.FileBase:
		refuse("The file changed since this page was loaded; nothing was written. Reload the page and edit again.")
		return
	}
	next, err := config.CheckFile(d.Path, []byte(text))
	if err == nil {
		err = s.o.Backend.CheckConfig(next)
	}
	if err != nil {
		refuse(errText(err))
		return
	}
	if r.PostFormValue("action") != "apply" {
		d.FileText, d.Diff, d.Preview, d.NoChange = text, lineDiff(string(cur), text, 3), "file", string(cur) == text
		s.render(w, r, http.StatusOK, "config", d)
		return
	}
	if err := config.ReplaceFile(d.Path, []byte(text), cur); err != nil {
		refuse(errText(err))
		return
	}
	s.audit(r.Context(), "config.edit", "", "whole file", "")
	s.redirect(w, r, "/ui/config", "Saved "+d.Path+". "+s.reload(r))
}

// reload applies a change at once (the file watcher may be off) and says
// what the daemon did.
func (s *Server) reload(r *http.Request) string {
	res, err := s.o.Backend.Reload(r.Context(), Actor)
	if err != nil {
		return "Reload: " + errText(err)
	}
	return res
}

// maskDiff hides the values of the changed lines (a secret key's edit).
func maskDiff(lines []diffLine) []diffLine {
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		out[i] = l
		if l.Op != "+" && l.Op != "-" {
			continue
		}
		out[i].Text = maskLine(l.Text, true)
	}
	return out
}

// hideSecrets masks the lines of a diff that show a secret written in plain
// text in the old or the new file (config.PlaintextSecretLines of each),
// whatever key was edited: a line such as `discord: {enabled: true, token:
// …}` changes with channels.discord.enabled, and a section set whole drops
// the old line.
func hideSecrets(lines []diffLine, before, after map[int]bool) []diffLine {
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		out[i] = l
		startA, inA := before[l.A]
		startB, inB := after[l.B]
		if (l.A > 0 && inA) || (l.B > 0 && inB) {
			out[i].Text = maskLine(l.Text, (!inA || startA) && (!inB || startB))
		}
	}
	return out
}

// maskLine hides a line's value; keepKey keeps what comes before its first
// ":" (a line where a value starts shows its key; the further lines of a
// value written over several lines show nothing).
func maskLine(text string, keepKey bool) string {
	if k, _, ok := strings.Cut(text, ":"); ok && keepKey {
		return k + ": [redacted]"
	}
	return "[redacted]"
}

// mcpSecret reports an MCP server's env variable or header key.
func mcpSecret(key string) bool {
	rest, ok := strings.CutPrefix(key, "mcp.servers.")
	return ok && (strings.Contains(rest, ".env.") || strings.Contains(rest, ".headers."))
}
