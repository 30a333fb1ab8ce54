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
func (a *app) remoteLine(ctx context.Context, remote *daemonClient, line string) error {
	resp, err := remote.do(ctx, http.MethodPost, "/admin/chat", url.Values{"text": {line}, "chat": {console.ChatID}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes))
	streamed := false
	for {
		var ev daemon.ChatEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("the daemon ended the chat before the answer was complete (is it shutting down?)")
			}
			return fmt.Errorf("read the daemon's answer: %w", err)
		}
		switch {
		case ev.Error != "":
			return errors.New(ev.Error)
		case ev.Delta != "":
			streamed = true
			fmt.Fprint(a.stdout, ev.Delta)
		case ev.Reset:
			if streamed {
				fmt.Fprintln(a.stdout)
			}
			streamed = false
		case ev.Text != "":
			if streamed {
				fmt.Fprintln(a.stdout) // the answer was streamed already: end its line
			} else {
				fmt.Fprintln(a.stdout, ev.Text)
			}
			streamed = false
		case ev.Done:
			if streamed {
				fmt.Fprintln(a.stdout)
			}
			return nil
		}
	}
}
