package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/memory"
)

// openStore opens the store of cfg for a CLI command that locate sent to
// run locally, explaining a daemon that started in between.
func openStore(cfg *config.Config) (memory.Store, error) {
	if err := requireData(cfg); err != nil {
		return nil, err
	}
	st, err := daemon.OpenStore(cfg, nil)
	if errors.Is(err, memory.ErrInUse) {
		return nil, fmt.Errorf("%w\nthe daemon is running and holds %s: stop it first, or use `switchboard status` / the /admin endpoints", err, storeName(cfg))
	}
	return st, err
}

// withStore runs fn on the opened store of cfg and closes it.
func withStore(cfg *config.Config, fn func(st memory.Store) error) error {
	st, err := openStore(cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

func (a *app) sessionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "List, show, export and reset conversations"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listSessions(cmd.Context(), asJSON)
		},
	}
	addJSONFlag(list, &asJSON)
	cmd.AddCommand(list)
	var archives bool
	show := &cobra.Command{
		Use:   "show KEY",
		Short: "Print a session's conversation (--archives: also the ones before each /reset)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.showSession(cmd.Context(), args[0], archives)
		},
	}
	show.Flags().BoolVar(&archives, "archives", false, "also print archived conversations")
	cmd.AddCommand(show, &cobra.Command{
		Use:   "export KEY",
		Short: "Write a session (with its archives) as JSON to stdout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, remote, err := a.locate(needData)
			if err != nil {
				return err
			}
			if remote != nil {
				return remote.copyTo(cmd.Context(), "/admin/sessions/export", url.Values{"key": {args[0]}}, a.stdout)
			}
			return withStore(cfg, func(st memory.Store) error { return st.ExportSession(cmd.Context(), args[0], a.stdout) })
		},
	}, &cobra.Command{
		Use:   "reset KEY",
		Short: "Start a fresh conversation in a session (the old one is archived)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, remote, err := a.locate(needData)
			if err != nil {
				return err
			}
			if remote != nil {
				var msg string
				if err := remote.call(cmd.Context(), http.MethodPost, "/admin/sessions/reset", url.Values{"key": {args[0]}}, &msg); err != nil {
					return err
				}
				fmt.Fprintln(a.listOut(), msg)
				return nil
			}
			return withStore(cfg, func(st memory.Store) error {
				if err := daemon.ResetSession(cmd.Context(), st, args[0], "cli", time.Now()); err != nil {
					return localErr(err)
				}
				fmt.Fprintf(a.listOut(), "reset %s (the previous conversation is archived)\n", args[0])
				return nil
			})
		},
	})
	return cmd
}

func (a *app) listSessions(ctx context.Context, asJSON bool) error {
	cfg, remote, err := a.locate(needData)
	if err != nil {
		return err
	}
	var list []memory.SessionMeta
	if remote != nil {
		err = remote.call(ctx, http.MethodGet, "/admin/sessions", nil, &list)
	} else {
		err = withStore(cfg, func(st memory.Store) error {
			list, err = st.ListSessions(ctx)
			return err
		})
	}
	if err != nil {
		return err
	}
	if asJSON {
		return a.writeJSON(sessionsJSON{Sessions: nonNil(list)})
	}
	if len(list) == 0 {
		fmt.Fprintln(a.listOut(), "no sessions yet")
		return nil
	}
	tw := tabwriter.NewWriter(a.listOut(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tTURNS\tMESSAGES\tTOKENS\tPERSONA\tUPDATED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", s.Key, s.Turns, s.Messages, s.Usage.TotalTokens,
			orDash(s.Persona), s.Updated.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

func (a *app) showSession(ctx context.Context, key string, archives bool) error {
	cfg, remote, err := a.locate(needData)
	if err != nil {
		return err
	}
	var v daemon.SessionView
	if remote != nil {
		form := url.Values{"key": {key}}
		if archives {
			form.Set("archives", "1")
		}
		err = remote.call(ctx, http.MethodGet, "/admin/sessions/show", form, &v)
	} else {
		err = withStore(cfg, func(st memory.Store) error {
			v, err = daemon.ViewSession(ctx, st, key, archives)
			return localErr(err)
		})
	}
	if err != nil {
		return err
	}
	meta := v.Meta
	fmt.Fprintf(a.listOut(), "session %s — %d turns, %d tokens, persona %s\n", meta.Key, meta.Turns, meta.Usage.TotalTokens, orDash(meta.Persona))
	if archives {
		for _, arc := range v.Archives {
			fmt.Fprintf(a.listOut(), "\n=== archived %s (%s)\n", arc.ID, arc.Archived.Local().Format(time.DateTime))
			a.printTurns(arc.Turns)
		}
		fmt.Fprintln(a.listOut(), "\n=== current")
	}
	a.printTurns(v.Turns)
	return nil
}

func (a *app) printTurns(turns []memory.Turn) {
	for _, t := range turns {
		for _, m := range t.Messages {
			ts := m.Time.Local().Format("15:04:05")
			switch {
			case m.Role == memory.RoleAssistant && len(m.ToolCalls) > 0:
				for _, c := range m.ToolCalls {
					fmt.Fprintf(a.listOut(), "[%s] assistant → %s(%s)\n", ts, c.Name, clip(c.Arguments, 120))
				}
			case m.Role == memory.RoleTool:
				fmt.Fprintf(a.listOut(), "[%s] tool %s: %s\n", ts, m.Name, clip(m.Content, 200))
			default:
				fmt.Fprintf(a.listOut(), "[%s] %s: %s\n", ts, m.Role, m.Content)
			}
		}
	}
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
