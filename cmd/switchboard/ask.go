package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboard-bot/switchboard/agent"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

func (a *app) askCmd() *cobra.Command {
	var session, persona string
	var noTools, verbose, fresh bool
	cmd := &cobra.Command{
		Use:   `ask "text"`,
		Short: "Ask the agent one question and print the answer (kept in the session cli:ask)",
		Long: `Ask the agent one question and print the answer.

The conversation is kept: every ask continues the session cli:ask (or the one
named by --session), so a follow-up question sees the earlier ones. --new starts
a fresh conversation first (the previous one is archived; see
switchboard sessions show --archives). With the daemon running, the question is
answered by the daemon (through its admin API); otherwise on the store directly.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := daemon.AskRequest{Session: session, Persona: persona, Text: strings.Join(args, " "), NoTools: noTools, New: fresh}
			if strings.TrimSpace(req.Session) == "" {
				return usageErr(errors.New("--session is empty: leave it out to use " + daemon.AskSession))
			}
			if strings.TrimSpace(req.Text) == "" {
				return usageErr(errors.New("nothing to ask: give the question as text, e.g. switchboard ask \"what time is it in Tokyo?\""))
			}
			cfg, remote, err := a.locate(mayCreate)
			if err != nil {
				return err
			}
			var answer string
			if remote != nil {
				var out struct{ Answer string }
				form := url.Values{"session": {req.Session}, "persona": {req.Persona}, "text": {req.Text}}
				if noTools {
					form.Set("no_tools", "1")
				}
				if fresh {
					form.Set("new", "1")
				}
				if err := remote.call(cmd.Context(), http.MethodPost, "/admin/ask", form, &out); err != nil {
					return noModel(err, true)
				}
				answer = out.Answer
			} else {
				level := slog.LevelWarn
				if verbose {
					level = cfg.Log.SlogLevel()
				}
				core, err := daemon.BuildCore(cfg, a.logger(cfg, level), nil)
				if err != nil {
					return err
				}
				defer core.Close()
				answer, err = daemon.Ask(cmd.Context(), core.Agent, core.Store, core.Personas, req)
				if err != nil {
					return noModel(localErr(err), false)
				}
			}
			fmt.Fprintln(a.stdout, answer)
			return nil
		},
	}
	cmd.Flags().StringVarP(&session, "session", "s", daemon.AskSession, "session key to keep the conversation in")
	cmd.Flags().StringVar(&persona, "persona", "", "persona to answer as (default: personas.default)")
	cmd.Flags().BoolVar(&noTools, "no-tools", false, "answer without tools")
	cmd.Flags().BoolVar(&fresh, "new", false, "start a fresh conversation in the session first (the old one is archived)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log at the configured level")
	return cmd
}

// noModel turns the setup guidance a turn without a model answers with
// (agent.NotConfiguredReply, in the daemon's answer or from the local
// agent) into what the operator sets: a configuration problem, exit 2.
// Other errors pass unchanged.
func noModel(err error, viaDaemon bool) error {
	if err == nil || !strings.Contains(err.Error(), agent.NotConfiguredReply) {
		return err
	}
	msg := "no model configured: set llm.api_key (OPENAI_API_KEY) or llm.base_url (a local OpenAI-compatible server such as Ollama: http://127.0.0.1:11434/v1)"
	if viaDaemon {
		msg += " for the running daemon: in its config file (it reloads), or in its environment (restart it)"
	}
	return usageErr(errors.New(msg))
}
