package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/redact"
	"github.com/switchboard-bot/switchboard/memory"
	"github.com/switchboard-bot/switchboard/memory/postgres"
)

// storageOpenTimeout bounds connecting to the target and migrating its
// schema; boltLockTimeout how long the source file's lock is waited for.
const (
	storageOpenTimeout = 2 * time.Minute
	boltLockTimeout    = 2 * time.Second
)

func (a *app) storageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "storage", Short: "Move the data store between backends"}
	var from, to string
	var force bool
	migrate := &cobra.Command{
		Use:   "migrate --from bolt:PATH --to postgres:URL",
		Short: "Copy a BoltDB installation into PostgreSQL and verify the counts",
		Long: `Copies everything a bolt data file holds into a PostgreSQL database: sessions (turns,
persona, archives), notes, jobs and their runs, pairing and other key/value state, the audit
log, the dedup records, and the pending inbox and outbox, keeping every id and time. The copy
is one transaction; afterwards the counts of both sides are printed and compared (exit 1 when
they differ).

Stop the daemon first (it holds the bolt file). The bolt file is read only after it passes the
integrity check ` + "`run`" + ` makes at start: a damaged file is refused (exit 1) before the target is
touched. The target's schema is created if needed; a target that already holds data is refused
unless --force, which empties it first.
"--to postgres" without a URL reads $DATABASE_URL (keeps the password off the command line).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := parseEndpoint("--from", from, "bolt")
			if err != nil {
				return err
			}
			dst, err := parseEndpoint("--to", to, "postgres")
			if err != nil {
				return err
			}
			if dst == "" {
				if dst = a.getenv("DATABASE_URL"); dst == "" {
					return usagef("--to postgres: give the URL (postgres:postgres://user:pass@host/db) or set DATABASE_URL")
				}
			}
			if src == "" {
				return usagef("--from bolt: give the file, e.g. --from bolt:./data/switchboard.db")
			}
			return a.migrateStorage(cmd.Context(), src, dst, force)
		},
	}
	migrate.Flags().StringVar(&from, "from", "", "source: bolt:PATH (the switchboard.db file)")
	migrate.Flags().StringVar(&to, "to", "", "target: postgres:URL (or postgres, for $DATABASE_URL)")
	migrate.Flags().BoolVar(&force, "force", false, "empty a target that already holds data, then copy")
	_ = migrate.MarkFlagRequired("from")
	_ = migrate.MarkFlagRequired("to")
	cmd.AddCommand(migrate)
	return cmd
}

// parseEndpoint splits "kind:rest" and checks the kind.
func parseEndpoint(flag, val, kind string) (string, error) {
	k, rest, _ := strings.Cut(val, ":")
	if k != kind {
		return "", usagef("%s %q: must be %s:…", flag, redact.Text(clipSecret(val)), kind)
	}
	return rest, nil
}

// clipSecret keeps a flag value printable: a value that is not a URL is
// shown by its kind only, since it may be a bare password-bearing DSN.
func clipSecret(v string) string {
	if strings.Contains(v, "://") || !strings.Contains(v, "=") {
		return v
	}
	k, _, _ := strings.Cut(v, ":")
	return k + ":[redacted]"
}

func (a *app) migrateStorage(ctx context.Context, boltPath, url string, force bool) error {
	fmt.Fprintf(a.stderr, "reading %s\n", boltPath)
	data, err := readBolt(boltPath, boltLockTimeout)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, storageOpenTimeout)
	defer cancel()
	st, err := postgres.Open(octx, url, memory.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(a.stderr, "writing %s\n", st.Path())
	empty, err := st.Empty(ctx)
	if err != nil {
		return err
	}
	if !empty && !force {
		return fmt.Errorf("the target %s already holds data: nothing copied (--force empties it first)", st.Path())
	}
	if err := st.Import(ctx, data, !empty); err != nil {
		return err
	}
	got, err := countStore(ctx, st)
	if err != nil {
		return fmt.Errorf("count the copy: %w", err)
	}
	if diff := printCounts(a.stdout, countImport(data), got); diff > 0 {
		return fmt.Errorf("%d counts differ between %s and %s", diff, boltPath, st.Path())
	}
	if err := st.Check(); err != nil {
		return fmt.Errorf("the copy does not pass the database check: %w", err)
	}
	fmt.Fprintf(a.stdout, "copied %s to %s; set storage.backend: postgres to use it\n", boltPath, st.Path())
	return nil
}

// counts are what migrate compares, in the order printed.
type counts [14]int

var countNames = [len(counts{})]string{"sessions", "turns (live and archived)", "messages (live)", "archives", "notes",
	"dedup records", "inbox pending", "inbox answered", "outbox records", "outbox pending", "jobs", "runs", "audit records",
	"kv entries (pairing, cursors)"}

func countImport(d postgres.Import) (c counts) {
	c[0] = len(d.Sessions)
	for _, s := range d.Sessions {
		c[1] += countTurns(s.Turns)
		c[2] += s.Meta.Messages
		c[3] += len(s.Archives)
		for _, a := range s.Archives {
			c[1] += countTurns(a.Turns)
		}
	}
	c[4], c[5] = len(d.Notes), len(d.Dedup)
	for _, it := range d.Inbox {
		if it.State == memory.InboxAnswered {
			c[7]++
		} else {
			c[6]++
		}
	}
	c[8] = len(d.Outbox)
	for _, r := range d.Outbox {
		if r.Status == memory.OutboxPending {
			c[9]++
		}
	}
	c[10], c[11], c[12], c[13] = len(d.Jobs), len(d.Runs), len(d.Audit), len(d.KV)
	return c
}

// countTurns counts turns that hold messages (the only ones a store keeps).
func countTurns(ts []memory.Turn) int {
	n := 0
	for _, t := range ts {
		if len(t.Messages) > 0 {
			n++
		}
	}
	return n
}

// countStore counts the target through the memory.Store API (Stats, and
// the turns of every session and archive).
func countStore(ctx context.Context, st memory.Store) (c counts, err error) {
	s, err := st.Stats(ctx)
	if err != nil {
		return c, err
	}
	sessions, err := st.ListSessions(ctx)
	if err != nil {
		return c, err
	}
	for _, m := range sessions {
		c[1] += m.Turns
		archives, err := st.ArchivedSessions(ctx, m.Key)
		if err != nil {
			return c, err
		}
		for _, a := range archives {
			c[1] += a.Meta.Turns
		}
	}
	c[0], c[2], c[3], c[4], c[5] = s.Sessions, s.Messages, s.Archives, s.Notes, s.DedupRecords
	c[6], c[7], c[8], c[9] = s.InboxPending, s.InboxAnswered, s.OutboxTotal, s.OutboxPending
	c[10], c[11], c[12], c[13] = s.Jobs, s.Runs, s.Audit, s.KV
	return c, nil
}

// printCounts writes the from/to table and returns how many rows differ.
func printCounts(w io.Writer, from, to counts) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RECORDS\tFROM\tTO\t")
	diff := 0
	for i, name := range countNames {
		mark := ""
		if from[i] != to[i] {
			mark, diff = "DIFFERS", diff+1
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", name, from[i], to[i], mark)
	}
	_ = tw.Flush()
	return diff
}
