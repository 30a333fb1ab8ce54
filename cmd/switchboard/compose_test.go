package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/ui"
)

// deploy/compose.replicas.yaml (issue 18) without Docker: three replicas on
// PostgreSQL sharing the personas volume, Caddy balancing webhooks over
// their /readyz, and the replicas' embedded config valid for this binary.
func TestComposeReplicasFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "compose.replicas.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
			Image       string            `yaml:"image"`
		} `yaml:"services"`
		Configs map[string]struct {
			Content string `yaml:"content"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("compose file: %v", err)
	}
	for _, name := range []string{"switchboard-1", "switchboard-2", "switchboard-3"} {
		svc, ok := f.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if !strings.Contains(strings.Join(svc.Volumes, " "), "personas:/data/personas") {
			t.Errorf("%s does not share the personas volume: %v", name, svc.Volumes)
		}
		if !strings.Contains(strings.Join(svc.Volumes, " "), "skills:/data/skills") {
			t.Errorf("%s does not share the skills volume: %v", name, svc.Volumes)
		}
		if url := svc.Environment["DATABASE_URL"]; !strings.HasPrefix(url, "postgres://") || !strings.Contains(url, "${POSTGRES_PASSWORD") {
			t.Errorf("%s: DATABASE_URL %q should take the password from the environment", name, url)
		}
	}
	if !strings.Contains(f.Configs["caddyfile"].Content, "health_uri /readyz") {
		t.Error("the load balancer does not check /readyz")
	}
	// compose turns $$ into $; switchboard then expands ${VAR}.
	cfgText := strings.ReplaceAll(f.Configs["switchboard"].Content, "$$", "$")
	env := map[string]string{"DATABASE_URL": "postgres://switchboard:pw@postgres:5432/switchboard", "SWITCHBOARD_ADMIN_TOKEN": "t0k3n-for-the-test"}
	cfg, err := config.Parse("/etc/switchboard/replica.yaml", []byte(cfgText), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the replicas' config does not load: %v", err)
	}
	if cfg.Storage.Backend != "postgres" || cfg.Cluster.LeaseTTL <= 0 {
		t.Errorf("replica config: backend %q, lease_ttl %v", cfg.Storage.Backend, cfg.Cluster.LeaseTTL)
	}
	// Issue 28: every directory the daemon writes is in the volumes.
	for key, dir := range map[string]string{"bot.data_dir": cfg.Bot.DataDir, "personas.dir": cfg.Personas.Dir, "skills.dir": cfg.Skills.Dir} {
		if got := cfg.ResolvePath(dir); !strings.HasPrefix(got, "/data/") && got != "/data" {
			t.Errorf("replica config: %s resolves to %s, outside the /data volumes", key, got)
		}
	}
}

// Issue 28 item 2: deploy/compose.yaml runs the image with its config in the
// volume (no mount over it that the daemon's user could not write) and gives
// the console its admin token from deploy/.env, with the way to make one
// written next to it; with that token the image's config serves the console.
func TestComposeSingleHostFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Volumes     []string          `yaml:"volumes"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("compose file: %v", err)
	}
	svc, ok := f.Services["switchboard"]
	if !ok {
		t.Fatal("no service switchboard")
	}
	if !slices.Contains(svc.Volumes, "switchboard-data:/data") {
		t.Errorf("the data volume is not mounted at /data: %v", svc.Volumes)
	}
	for _, v := range svc.Volumes {
		if strings.Contains(v, ":/etc/switchboard") || strings.Contains(v, ":/data/config.yaml") {
			t.Errorf("a mount over the config (%s) keeps `config set` and the console from editing it", v)
		}
	}
	if c, set := svc.Environment["SWITCHBOARD_CONFIG"]; set && !strings.HasPrefix(c, "/data/") {
		t.Errorf("SWITCHBOARD_CONFIG %q is outside the volume", c)
	}
	if tok := svc.Environment["SWITCHBOARD_ADMIN_TOKEN"]; !strings.HasPrefix(tok, "${SWITCHBOARD_ADMIN_TOKEN:?") {
		t.Errorf("SWITCHBOARD_ADMIN_TOKEN = %q: want it required from deploy/.env (${SWITCHBOARD_ADMIN_TOKEN:?…})", tok)
	}
	if !strings.Contains(string(raw), "openssl rand -hex 32") {
		t.Error("deploy/compose.yaml does not say how to make the admin token")
	}

	// The image's default config (the Dockerfile's `config set` lines on
	// the shipped config.yaml) with and without the token.
	spec := readDockerfile(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	shipped, err := os.ReadFile(filepath.Join("..", "..", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shipped, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range spec.sets {
		if err := config.SetInFile(path, kv[0], kv[1]); err != nil {
			t.Fatalf("config set %s %s: %v", kv[0], kv[1], err)
		}
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env     map[string]string
		serving bool
	}{
		{map[string]string{"SWITCHBOARD_ADMIN_TOKEN": "from-deploy-env"}, true},
		{map[string]string{}, false},
	} {
		cfg, err := config.Parse(spec.env["SWITCHBOARD_CONFIG"], text, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		if err != nil {
			t.Fatalf("the image's config does not load: %v", err)
		}
		if err := ui.CheckServe(cfg); (err == nil) != tt.serving || !cfg.Server.UI {
			t.Errorf("env %v: the console serves: %v (want %v), server.ui %v", tt.env, err, tt.serving, cfg.Server.UI)
		}
	}
}
