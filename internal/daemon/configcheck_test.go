package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
)

// Issue 28 item 1: the console's config editor, `config set` (through
// /admin/config/check) and a reload run one check. personas.dir changes only
// at a restart, so a default persona found only in the new directory is
// refused by all three, not accepted by the editor and then rejected by the
// reload.
func TestConfigCheckIsTheReloadCheck(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	l := startLive(t, llm, baseConfig, false)
	other := filepath.Join(l.dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(other, "zebra.md"), "---\ndescription: Z\n---\nYou are a zebra.\n")
	old, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(old), "  dir: ./personas\n  default: assistant\n", "  dir: ./other\n  default: zebra\n", 1)
	const want = `personas.default: unknown persona "zebra"`

	next, err := config.CheckFile(l.path, []byte(text)) // what the console parses
	if err != nil {
		t.Fatal(err)
	}
	if err := (consoleBackend{l.d}).CheckConfig(next); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("the console's check: %v, want %q", err, want)
	}
	if res := l.d.CheckConfigText([]byte(text)); res.OK || !strings.Contains(res.Error, want) {
		t.Fatalf("the daemon's check: %+v, want %q", res, want)
	}
	writeFile(t, l.path, text)
	if _, err := l.d.Reload(context.Background(), "test"); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reload: %v, want %q", err, want)
	}
}

// The check runs in the daemon's environment and foresees what a reload
// applies; ReloadTo applies the file once and says so when it already runs it.
func TestConfigCheckPredictsAndReloadToApplies(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Echo())
	l := startLive(t, llm, baseConfig, false)
	old, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SB_CHECK_MODEL", "from-the-daemon-env")
	text := strings.Replace(string(old), "  max_retries: 1\n", "  max_retries: 1\n  model: ${SB_CHECK_MODEL}\n", 1)
	text = strings.Replace(text, "bot:\n", "bot:\n  name: Renamed\n", 1)
	res := l.d.CheckConfigText([]byte(text))
	if !res.OK || strings.Join(res.Change.Applied, ",") != "llm/agent" || strings.Join(res.Change.RestartNeeded, ",") != "bot.name" {
		t.Fatalf("check: %+v", res)
	}
	writeFile(t, l.path, text)
	ch := l.d.ReloadTo(context.Background(), "test", config.DigestOf([]byte(text)))
	if ch.Error != "" || ch.Already || strings.Join(ch.Applied, ",") != "llm/agent" || strings.Join(ch.RestartNeeded, ",") != "bot.name" {
		t.Fatalf("reload: %+v", ch)
	}
	if got := l.d.config().LLM.Model; got != "from-the-daemon-env" {
		t.Fatalf("model after the reload: %q", got)
	}
	if ch := l.d.ReloadTo(context.Background(), "test", config.DigestOf([]byte(text))); !ch.Already {
		t.Fatalf("a second ReloadTo of the same file: %+v", ch)
	}
}
