package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/personas"
)

func (a *app) personasCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "personas", Short: "List and show the persona files"}
	load := func() (*personas.Set, error) {
		cfg, err := a.loadConfig()
		if err != nil {
			return nil, err
		}
		set, skipped, _ := daemon.LoadPersonaSet(cfg, cfg.ResolvePath(cfg.Personas.Dir)) // built-ins + files
		for _, e := range skipped {
			fmt.Fprintf(a.stderr, "warning: %v\n", e)
		}
		return set, nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List personas (malformed files are reported with file:line and skipped)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			set, err := load()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION\tMODEL\tTOOLS")
			for _, n := range set.Names() {
				p, _ := set.Get(n)
				tools := "(all)"
				if p.Tools != nil {
					tools = strings.Join(p.Tools, ",")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, p.Description, orDash(p.Model), orDash(tools))
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:   "show NAME",
		Short: "Print a persona file as loaded",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			set, err := load()
			if err != nil {
				return err
			}
			p, ok := set.Get(args[0])
			if !ok {
				return usageErr(fmt.Errorf("no persona %q (have: %s)", args[0], strings.Join(set.Names(), ", ")))
			}
			raw, err := personas.Format(p)
			if err != nil {
				return err
			}
			fmt.Fprint(a.stdout, string(raw))
			return nil
		},
	})
	return cmd
}

// promptCmd prints the exact system prompt and runtime block a turn in a
// chat would get — for operators debugging a persona.
func (a *app) promptCmd() *cobra.Command {
	var target, sender, text string
	cmd := &cobra.Command{
		Use:   "prompt --target KEY",
		Short: "Print the system prompt and runtime block a turn in a chat would get",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, remote, err := a.locate(dataOptional)
			if err != nil {
				return err
			}
			var v daemon.PromptView
			if remote != nil {
				err = remote.call(cmd.Context(), http.MethodGet, "/admin/prompt",
					url.Values{"target": {target}, "sender": {sender}, "text": {text}}, &v)
			} else {
				core, release, cerr := a.promptCore(cfg) // creates nothing
				if cerr != nil {
					return cerr
				}
				defer release()
				v, err = daemon.BuildPrompt(cmd.Context(), core.Agent, core.Personas, target, sender, text)
				err = localErr(err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "# persona: %s   (generated %s)\n", v.Persona, time.Now().Format(time.DateTime))
			for i, s := range v.System {
				fmt.Fprintf(a.stdout, "\n===== system message %d =====\n%s\n", i+1, s)
			}
			fmt.Fprintf(a.stdout, "\n===== runtime block (sent with the user message) =====\n%s\n", v.Runtime)
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "chat address, e.g. telegram:12345")
	cmd.Flags().StringVar(&sender, "sender", "Operator", "sender display name for the runtime block")
	cmd.Flags().StringVar(&text, "text", "hello", "user message text")
	_ = cmd.MarkFlagRequired("target")
	return cmd
}
