package loadtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-bot/switchboard/internal/testkit/fakediscord"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakellm"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakeslack"
	"github.com/switchboard-bot/switchboard/internal/testkit/faketelegram"
)

// Secret values the harness hands the daemon through its environment. They
// are distinctive so the security tests can scan every output for them.
const (
	TelegramToken = "7000000001:AAloadtestTelegramSecretToken_x9Q2"
	DiscordToken  = "MTAxloadtestDiscordSecretToken.Gx7.k3Z"
	SlackBotToken = "xoxb-loadtest-slack-bot-secret-55a1"
	SlackAppToken = "xapp-1-loadtest-slack-app-secret-77c2"
	SlackSigning  = "loadtest-signing-secret-0c4e9d"
	LLMKey        = "sk-loadtest-model-secret-4f1a"
)

// ModelOptions shape the fake model's answers.
type ModelOptions struct {
	Delay           time.Duration // before the response headers (model latency)
	TokensPerSecond float64       // chunk pacing; 0 = instant
	// Responder overrides the echo answer (chaos tests inject faults).
	Responder fakellm.Responder
	// Lean answers through EchoModel instead of fakellm (instant echo only:
	// Delay, TokensPerSecond and Responder must be unset). Platforms.LLM is
	// then nil.
	Lean bool
}

// Platforms are the fakes and their taps, all in this process. A tap
// watches the bot's calls from inside its fake's server (the fakes' Wrap
// option), so the daemon talks to the fakes directly.
type Platforms struct {
	LLM      *fakellm.Server // nil with ModelOptions.Lean
	Echo     *EchoModel      // with ModelOptions.Lean
	Telegram *faketelegram.Server
	Discord  *fakediscord.Server
	Slack    *fakeslack.Server

	TelegramTap, DiscordTap, SlackTap *Tap

	mu      sync.Mutex
	waiters map[string]chan time.Time
	// Slack envelopes sent by SayOn (envelope id -> text), and the tokens
	// of those RedeliverSlack sent again (Redelivered).
	slackSent   map[string]string
	redelivered map[string]bool
}

// StartPlatforms starts the fake model and the three fake platforms with
// their taps. Close releases them.
func StartPlatforms(m ModelOptions) (*Platforms, error) {
	resp := m.Responder
	if resp == nil {
		echo := fakellm.Echo()
		resp = func(r *fakellm.Request) fakellm.Response {
			out := echo(r)
			out.Delay = m.Delay
			out.TokensPerSecond = m.TokensPerSecond
			return out
		}
	}
	p := &Platforms{waiters: map[string]chan time.Time{}, slackSent: map[string]string{}, redelivered: map[string]bool{}}
	if m.Lean {
		p.Echo = NewEchoModel()
	} else {
		p.LLM = fakellm.New(resp)
	}
	p.TelegramTap = newTap(telegramSend, telegramID)
	p.DiscordTap = newTap(discordSend, discordID)
	p.SlackTap = newTap(slackSend, slackID)
	for _, t := range []*Tap{p.TelegramTap, p.DiscordTap, p.SlackTap} {
		t.onSight = p.sighted
	}
	p.Telegram = faketelegram.Start(faketelegram.Options{Token: TelegramToken, Wrap: p.TelegramTap.Wrap})
	p.Discord = fakediscord.New(fakediscord.Options{Token: DiscordToken, Wrap: p.DiscordTap.Wrap})
	p.Slack = fakeslack.Start(fakeslack.Options{BotToken: SlackBotToken, AppToken: SlackAppToken, Wrap: p.SlackTap.Wrap})
	p.TelegramTap.url = p.Telegram.URL()
	p.DiscordTap.url = p.Discord.URL()
	p.SlackTap.url = strings.TrimSuffix(strings.TrimSuffix(p.Slack.APIURL(), "api/"), "/")
	return p, nil
}

// modelURL is llm.base_url for the daemon.
func (p *Platforms) modelURL() string {
	if p.Echo != nil {
		return p.Echo.URL
	}
	return p.LLM.URL
}

// ModelRequests is how many chat completions the model answered.
func (p *Platforms) ModelRequests() int {
	if p.Echo != nil {
		return p.Echo.RequestCount()
	}
	return p.LLM.RequestCount()
}

// Close stops every fake; safe on a partly started set.
func (p *Platforms) Close() {
	if p.Telegram != nil {
		p.Telegram.Close()
	}
	if p.Discord != nil {
		p.Discord.Close()
	}
	if p.Slack != nil {
		p.Slack.Close()
	}
	if p.LLM != nil {
		p.LLM.Close()
	}
	if p.Echo != nil {
		p.Echo.Close()
	}
}

// Expect registers interest in tok before the message is sent; the returned
// channel receives the time the reply was first seen.
func (p *Platforms) Expect(tok string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	p.mu.Lock()
	p.waiters[tok] = ch
	p.mu.Unlock()
	return ch
}

func (p *Platforms) sighted(tok string, at time.Time) {
	p.mu.Lock()
	ch := p.waiters[tok]
	delete(p.waiters, tok)
	p.mu.Unlock()
	if ch != nil {
		ch <- at
	}
}

// Platform names the three chat platforms.
type Platform int

// The platforms a chat may live on.
const (
	Telegram Platform = iota
	Discord
	Slack
)

func (pl Platform) String() string {
	return [...]string{"telegram", "discord", "slack"}[pl]
}

// PlatformOf spreads chats over the three platforms round-robin.
func PlatformOf(chat int) Platform { return Platform(chat % 3) }

// ParsePlatforms reads a comma-separated list of platform names
// ("discord,slack"); empty means all three.
func ParsePlatforms(s string) ([]Platform, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Platform
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		pl := slices.IndexFunc([]Platform{Telegram, Discord, Slack}, func(p Platform) bool { return p.String() == name })
		if pl < 0 {
			return nil, fmt.Errorf("unknown platform %q (want telegram, discord or slack)", name)
		}
		if !slices.Contains(out, Platform(pl)) {
			out = append(out, Platform(pl))
		}
	}
	return out, nil
}

// Say sends text as a direct message from chat's user on its platform.
func (p *Platforms) Say(chat int, text string) { p.SayOn(PlatformOf(chat), chat, text) }

// SayOn sends text as a direct message from chat's user on platform pl.
func (p *Platforms) SayOn(pl Platform, chat int, text string) {
	switch pl {
	case Telegram:
		p.Telegram.UserSays(TelegramChatID(chat), text)
	case Discord:
		p.Discord.UserSays(DiscordChannelID(chat), DiscordUserID(chat), text, fakediscord.SayOptions{})
	case Slack:
		_, env := p.Slack.UserDMs(SlackUserID(chat), text)
		p.mu.Lock()
		p.slackSent[env] = text
		p.mu.Unlock()
	}
}

// Redelivered reports whether the Slack message carrying token was sent
// again by RedeliverSlack: it was left unacknowledged (the replica holding
// its connection was killed, or slow to acknowledge), so Slack itself
// delivered it late, after what the user sent next.
func (p *Platforms) Redelivered(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.redelivered[token]
}

// redeliver sends Slack envelope id again, its tokens recorded first (the
// delivery may be read before Redeliver returns).
func (p *Platforms) redeliver(id string) {
	p.mu.Lock()
	text, ok := p.slackSent[id]
	for _, tok := range tokenRE.FindAllString(text, -1) {
		p.redelivered[tok] = true
	}
	p.mu.Unlock()
	again := p.Slack.Redeliver(id)
	if ok {
		p.mu.Lock()
		p.slackSent[again] = text
		p.mu.Unlock()
	}
}

// TelegramChatID, DiscordChannelID, DiscordUserID and SlackUserID map a
// harness chat number to the platform's ids.
func TelegramChatID(chat int) int64    { return 500000 + int64(chat) }
func DiscordChannelID(chat int) string { return strconv.Itoa(800000000000 + chat) }
func DiscordUserID(chat int) string    { return strconv.Itoa(900000000000 + chat) }
func SlackUserID(chat int) string      { return fmt.Sprintf("U%07d", chat) }

// Sightings merges what the three taps saw.
func (p *Platforms) Sightings() map[string]Sighting {
	out := map[string]Sighting{}
	for _, t := range []*Tap{p.TelegramTap, p.DiscordTap, p.SlackTap} {
		for k, v := range t.Sightings() {
			if o, ok := out[k]; ok {
				v.Creates += o.Creates
				if o.First.Before(v.First) {
					v.First = o.First
				}
			}
			out[k] = v
		}
	}
	return out
}

// Repeats merges the three taps' repeated replies (see Tap.Repeats).
func (p *Platforms) Repeats() []string {
	var out []string
	for _, t := range []*Tap{p.TelegramTap, p.DiscordTap, p.SlackTap} {
		out = append(out, t.Repeats()...)
	}
	return out
}

// ConfigOptions are the daemon settings the harness varies.
type ConfigOptions struct {
	DataDir            string
	Listen             string // default 127.0.0.1:0
	MaxConcurrentTurns int    // default 64
	LogLevel           string // default warn
	AccessMode         string // default open
	AllowFrom          []string
	Tools              []string // agent.tools (default [current_time])
	Admins             []string // bot.admins
	// SlackHTTP runs Slack on the Events API (webhook on server.listen)
	// instead of Socket Mode; TelegramWebhookURL, when set, runs Telegram in
	// webhook mode with the secret ${TELEGRAM_WEBHOOK_SECRET}.
	SlackHTTP          bool
	TelegramWebhookURL string
	Extra              string // appended YAML (top-level keys not written above)
	MaxAnswerChunks    int    // agent.max_answer_chunks; 0 = the daemon's default
	// NoTelegram leaves the Telegram channel disabled (the Discord + Slack
	// mode, free of Telegram's deliberate send pacing); NoDiscord and NoSlack
	// leave theirs disabled (the Telegram-only mode).
	NoTelegram, NoDiscord, NoSlack bool
	// TelegramUnpaced sets channels.telegram.rate.per_chat and .global to 0
	// (no send pacing), as for a test server or a paid-broadcast bot.
	TelegramUnpaced bool
}

// TelegramWebhookSecret is the webhook secret handed to the daemon.
const TelegramWebhookSecret = "tgWebhookSecret_loadtest_91b7"

// AdminToken is server.admin_token, handed to the daemon through its environment.
const AdminToken = "admin-token-loadtest-secret-3d8e"

// Env is the child's environment: the secrets the config references.
func (p *Platforms) Env() []string {
	return []string{
		"TELEGRAM_BOT_TOKEN=" + TelegramToken,
		"DISCORD_BOT_TOKEN=" + DiscordToken,
		"SLACK_BOT_TOKEN=" + SlackBotToken,
		"SLACK_APP_TOKEN=" + SlackAppToken,
		"SLACK_SIGNING_SECRET=" + SlackSigning,
		"OPENAI_API_KEY=" + LLMKey,
		"TELEGRAM_WEBHOOK_SECRET=" + TelegramWebhookSecret,
		"SWITCHBOARD_ADMIN_TOKEN=" + AdminToken,
	}
}

// WriteConfig writes a config.yaml for the three platforms and the fake
// model into dir and returns its path. Secrets are ${ENV} references.
func (p *Platforms) WriteConfig(dir string, o ConfigOptions) (string, error) {
	o = o.withDefaults(dir)
	answerChunks := ""
	if o.MaxAnswerChunks > 0 {
		answerChunks = fmt.Sprintf("\n  max_answer_chunks: %d", o.MaxAnswerChunks)
	}
	slackMode, tgMode := "socket", "polling"
	if o.SlackHTTP {
		slackMode = "http"
	}
	if o.TelegramWebhookURL != "" {
		tgMode = "webhook"
	}
	tgRate := ""
	if o.TelegramUnpaced {
		tgRate = "\n    rate: { per_chat: 0, global: 0 }"
	}
	cfg := fmt.Sprintf(configTemplate, o.DataDir, yamlList(o.Admins), p.modelURL(), o.MaxConcurrentTurns, yamlList(o.Tools), answerChunks, o.AccessMode, yamlList(o.AllowFrom),
		!o.NoTelegram, p.TelegramTap.URL(), tgMode, o.TelegramWebhookURL, tgRate, !o.NoDiscord, p.DiscordTap.URL(), p.Discord.GatewayURL(),
		!o.NoSlack, slackMode, p.SlackTap.URL()+"/api/", o.Listen, o.LogLevel, o.Extra)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("write config: %w", err)
	}
	return path, nil
}

// withDefaults fills in the settings left empty; the data directory defaults
// to dir/data.
func (o ConfigOptions) withDefaults(dir string) ConfigOptions {
	if o.DataDir == "" {
		o.DataDir = filepath.Join(dir, "data")
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.MaxConcurrentTurns == 0 {
		o.MaxConcurrentTurns = 64
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.AccessMode == "" {
		o.AccessMode = "open"
	}
	if len(o.Tools) == 0 {
		o.Tools = []string{"current_time"}
	}
	return o
}

// yamlList writes l as a YAML flow sequence of strings.
func yamlList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	return `["` + strings.Join(l, `", "`) + `"]`
}

// configTemplate is the daemon config WriteConfig fills in.
const configTemplate = `bot:
  name: Loadtest
  data_dir: %q
  timezone: UTC
  admins: %s
llm:
  base_url: %q
  api_key: ${OPENAI_API_KEY}
  model: fake-model
  timeout: 30s
  max_retries: 5
  tool_protocol: native
agent:
  max_concurrent_turns: %d
  tools: %s%s
access:
  mode: %s
  allow_from: %s
  groups: mention
channels:
  console:
    enabled: false
  telegram:
    enabled: %t
    token: ${TELEGRAM_BOT_TOKEN}
    api_url: %q
    mode: %s
    webhook_url: %q
    webhook_secret: ${TELEGRAM_WEBHOOK_SECRET}%s
  discord:
    enabled: %t
    token: ${DISCORD_BOT_TOKEN}
    api_url: %q
    gateway_url: %q
  slack:
    enabled: %t
    bot_token: ${SLACK_BOT_TOKEN}
    app_token: ${SLACK_APP_TOKEN}
    signing_secret: ${SLACK_SIGNING_SECRET}
    mode: %s
    api_url: %q
    thread_replies: false
server:
  listen: %q
  admin_token: ${SWITCHBOARD_ADMIN_TOKEN}
log:
  level: %s
  format: text
%s`

// RedeliverSlack plays Slack's retry policy until ctx ends: every envelope
// left unacknowledged for longer than after is delivered again (same event,
// retry_attempt+1), once per envelope id. It returns when ctx is done.
func (p *Platforms) RedeliverSlack(ctx context.Context, after time.Duration) {
	firstSeen := map[string]time.Time{}
	done := map[string]bool{}
	t := time.NewTicker(after / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, id := range p.Slack.Unacked() {
			if done[id] {
				continue
			}
			fs, ok := firstSeen[id]
			if !ok {
				firstSeen[id] = now
				continue
			}
			if now.Sub(fs) >= after {
				done[id] = true
				p.redeliver(id)
			}
		}
	}
}
