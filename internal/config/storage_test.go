package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// storage.postgres.url defaults to ${DATABASE_URL}, is a secret (never
// rendered, also not in validation errors), and is checked when the
// backend is postgres.
func TestStoragePostgresURL(t *testing.T) {
	const pw = "pg-" + distinct
	url := "postgres://sb:" + pw + "@db.internal:5432/switchboard"
	cases := []struct {
		name, yaml string
		env        map[string]string
		wantErr    string // "" = valid
	}{
		{"from DATABASE_URL", "storage:\n  backend: postgres\n", map[string]string{"DATABASE_URL": url}, ""},
		{"explicit reference", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": url}, ""},
		{"dsn", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": "host=db user=sb password=" + pw + " dbname=x"}, ""},
		{"unset", "storage:\n  backend: postgres\n", nil, "storage.postgres.url is empty: set DATABASE_URL (storage.backend is postgres)"},
		{"wrong scheme", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": "mysql://sb:" + pw + "@db/x"}, `must be a postgres:// or postgresql:// URL`},
		{"not a url", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": pw}, "must be a postgres:// URL or a key=value DSN"},
		{"bolt ignores it", "storage:\n  backend: bolt\n", nil, ""},
		{"unencoded @ in the password", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": "postgres://sb:" + pw + "@x@db.internal:5432/switchboard"},
			"config.yaml:4: storage.postgres.url: the user info holds an unencoded '@': percent-encode '@' in the password as %40"},
		{"unencoded @, postgresql:// from DATABASE_URL", "storage:\n  backend: postgres\n", map[string]string{"DATABASE_URL": "postgresql://sb@corp:" + pw + "@db/x"},
			"storage.postgres.url: the user info holds an unencoded '@'"},
		{"encoded @", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": "postgres://sb:" + pw + "%40x@db.internal:5432/switchboard"}, ""},
		{"@ in the query only", "storage:\n  backend: postgres\n  postgres:\n    url: ${PG}\n", map[string]string{"PG": "postgres://sb:" + pw + "@db/x?application_name=a@b"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("config.yaml", []byte(c.yaml), envOf(c.env))
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Parse error = %v, want it to contain %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "@x@") || strings.Contains(err.Error(), "db.internal") {
					t.Fatalf("validation error shows the password: %v", err)
				}
				return
			}
			if c.env != nil && !cfg.Storage.Postgres.URL.IsSet() {
				t.Fatal("storage.postgres.url not loaded")
			}
			j, _ := json.Marshal(cfg)
			for name, out := range map[string]string{"%+v": fmt.Sprintf("%+v", *cfg), "json": string(j)} {
				if strings.Contains(out, pw) {
					t.Errorf("%s rendering shows the database password", name)
				}
			}
			if !IsSecretKey("storage.postgres.url") {
				t.Error("storage.postgres.url is not a secret key")
			}
		})
	}
}
