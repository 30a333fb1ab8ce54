package bolt

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/memory"

	bbolt "go.etcd.io/bbolt"
)

// thousandFiles is one change of 1,000 files of 100 bytes.
func thousandFiles() memory.WorkspaceChange {
	var c memory.WorkspaceChange
	for i := range 1000 {
		c.Writes = append(c.Writes, memory.FileWrite{Path: fmt.Sprintf("dir%02d/file%04d.txt", i%10, i), Content: []byte(strings.Repeat("x", 100))})
	}
	return c
}

// BenchmarkApply1000SmallFiles: one ApplyFiles of 1,000 files of 100 bytes
// (the write cost of a big exec write-back), with fsync.
func BenchmarkApply1000SmallFiles(b *testing.B) {
	st, err := Open(filepath.Join(b.TempDir(), "db"), memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c := thousandFiles()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.ApplyFiles(context.Background(), fmt.Sprintf("chat:%d", i), c, memory.WorkspaceLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWorkspaceOverheadPerFile reports (-v) the bytes the workspace bucket
// uses per file beyond the content: records, keys, page slack.
func TestWorkspaceOverheadPerFile(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "db"), memory.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := thousandFiles()
	if err := st.ApplyFiles(context.Background(), "telegram:1", c, memory.WorkspaceLimits{}); err != nil {
		t.Fatal(err)
	}
	err = st.db.View(func(tx *bbolt.Tx) error {
		s := tx.Bucket(bWorkspace).Stats()
		used := s.BranchInuse + s.LeafInuse
		alloc := s.BranchAlloc + s.LeafAlloc
		content := c.Bytes()
		t.Logf("1,000 files of 100 bytes: %d bytes in use (%d per file beyond content), %d allocated in pages (%d per file beyond content)",
			used, (int64(used)-content)/1000, alloc, (int64(alloc)-content)/1000)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
