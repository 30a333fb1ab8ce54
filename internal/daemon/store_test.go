package daemon

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/memory/bolt"
)

func TestOpenStorePicksBackendFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Bot.DataDir = t.TempDir()
	st, err := OpenStore(cfg, nil)
	if err != nil {
		t.Fatalf("OpenStore(bolt): %v", err)
	}
	if _, ok := st.(*bolt.Store); !ok {
		t.Errorf("storage.backend bolt opened %T", st)
	}
	if st.Path() != cfg.DBPath() {
		t.Errorf("Path = %q, want %q", st.Path(), cfg.DBPath())
	}
	_ = st.Close()

	cfg.Storage.Backend = "postgres" // without storage.postgres.url
	if st, err := OpenStore(cfg, nil); err == nil || !strings.Contains(err.Error(), "empty URL") {
		if st != nil {
			_ = st.Close()
		}
		t.Errorf("OpenStore(postgres) without a URL: err = %v, want an empty-URL error", err)
	}
}
