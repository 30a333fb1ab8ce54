package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The doctor connects to each MCP server: a command that does not exist
// fails with a fix naming the key, a disabled server is reported as such.
func TestMCPCheckReportsBrokenServer(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	text := "bot:\n  data_dir: " + filepath.Join(dir, "data") + "\nmcp:\n  servers:\n    broken:\n      command: " +
		filepath.Join(dir, "no-such-server") + "\n      timeout: 2s\n    off:\n      url: http://127.0.0.1:1/mcp\n      enabled: false\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := Check(ctx, Options{ConfigPath: cfg, Timeout: 3 * time.Second, LookupEnv: func(string) (string, bool) { return "", false }})
	var got *Result
	for i := range res {
		if res[i].Name == CheckMCP {
			got = &res[i]
		}
	}
	if got == nil {
		t.Fatalf("no %q check in %+v", CheckMCP, res)
	}
	if got.Status != StatusFail || !strings.Contains(got.Finding, "broken: cannot connect") ||
		!strings.Contains(got.Finding, "off: disabled") || !strings.Contains(got.Fix, "mcp.servers.broken") {
		t.Fatalf("mcp check: %+v", *got)
	}
}
