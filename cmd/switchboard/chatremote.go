package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/signal"
	"strings"
	"syscall"

	"github.com/switchboard-bot/switchboard/channels/console"
	"github.com/switchboard-bot/switchboard/internal/config"
	"github.com/switchboard-bot/switchboard/internal/daemon"
)

// remoteChat is `switchboard chat` while the daemon runs: each line goes to
// the daemon's console chat (console:local, the conversation `chat` keeps
// without the daemon too) through the admin API, and the answer streams back.
// Ctrl-D ends the chat; Ctrl-C ends it too, and stops an answer in progress
// (like /stop: it is not answered later).
func (a *app) remoteChat(ctx context.Context, cfg *config.Config, remote *daemonClient) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(a.stdout, "Chatting with %s through the running daemon (model %s). Type /help for commands, Ctrl-D or Ctrl-C to quit.\n",
		cfg.Bot.Name, cfg.LLM.Model)
	lines := make(chan string)
	errc := make(chan error, 1)
	go func() { // ends with the input; stdin cannot be interrupted portably
		sc := bufio.NewScanner(a.stdin)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		errc <- sc.Err()
	}()
	for {
		fmt.Fprint(a.stdout, "> ")
		var line string
		select {
		case <-ctx.Done():
			fmt.Fprintln(a.stdout)
			return nil
		case err := <-errc:
			fmt.Fprintln(a.stdout)
			if err != nil {
				return fmt.Errorf("read input: %w", err)
			}
			return nil
		case line = <-lines:
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if err := a.remoteLine(ctx, remote, line); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(a.stdout, "\n(canceled)")
				return nil
			}
			return err
		}
	}
}

// remoteLine sends one line and prints the streamed events as the console would.
// A streamed line is always ended before anything else is printed: a
// message that is not the streamed text (the error sentence of a turn whose
// stream broke off) and the CLI's own error when the daemon's answer stops
// short, so neither is glued to the partial text.
func (a *app) remoteLine(ctx context.Context, remote *daemonClient, line string) error {
	resp, err := remote.do(ctx, http.MethodPost, "/admin/chat", url.Values{"text": {line}, "chat": {console.ChatID}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes))
	var streamed strings.Builder // the text of the streamed line so far
	endLine := func() {
		if streamed.Len() > 0 {
			fmt.Fprintln(a.stdout)
		}
		streamed.Reset()
	}
	for {
		var ev daemon.ChatEvent
		if err := dec.Decode(&ev); err != nil {
			endLine()
			if errors.Is(err, io.EOF) {
				return errors.New("the daemon ended the chat before the answer was complete (is it shutting down?)")
			}
			return fmt.Errorf("read the daemon's answer: %w", err)
		}
		switch {
		case ev.Error != "":
			endLine()
			return errors.New(ev.Error)
		case ev.Delta != "":
			streamed.WriteString(ev.Delta)
			fmt.Fprint(a.stdout, ev.Delta)
		case ev.Reset:
			endLine()
		case ev.Text != "":
			shown := streamed.Len() > 0 && strings.TrimSpace(ev.Text) == strings.TrimSpace(streamed.String())
			endLine()
			if !shown { // the answer was not (all) streamed, or this is another message
				fmt.Fprintln(a.stdout, ev.Text)
			}
		case ev.Done:
			endLine()
			return nil
		}
	}
}
