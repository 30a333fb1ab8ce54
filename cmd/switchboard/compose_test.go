package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchboard-bot/switchboard/internal/config"
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
	cfg, err := config.Parse("replica.yaml", []byte(cfgText), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the replicas' config does not load: %v", err)
	}
	if cfg.Storage.Backend != "postgres" || cfg.Cluster.LeaseTTL <= 0 {
		t.Errorf("replica config: backend %q, lease_ttl %v", cfg.Storage.Backend, cfg.Cluster.LeaseTTL)
	}
}
