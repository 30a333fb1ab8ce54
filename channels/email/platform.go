package email

import (
	"context"
	"fmt"
	"net/mail"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Config is the channels.email section of config.yaml.
type Config struct {
	Enabled            bool       `yaml:"enabled"`
	Address            string     `yaml:"address"` // the bot's address
	IMAP               IMAPConfig `yaml:"imap"`
	SMTP               SMTPConfig `yaml:"smtp"`
	RequireAuthResults bool       `yaml:"require_auth_results"`
	AuthServID         string     `yaml:"authserv_id"`
}

// IMAPConfig is channels.email.imap: where the bot reads its mail.
type IMAPConfig struct {
	URL      string          `yaml:"url"` // imaps://host:993 | imap://host:143
	Username string          `yaml:"username"`
	Password platform.Secret `yaml:"password"`
	Mailbox  string          `yaml:"mailbox"`
}

// SMTPConfig is channels.email.smtp: where the bot submits its mail.
type SMTPConfig struct {
	URL      string          `yaml:"url"` // smtps://host:465 | smtp://host:587
	Username string          `yaml:"username"`
	Password platform.Secret `yaml:"password"`
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// ConfigIn returns the email section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }

// leaseIMAP is the cluster lease reading the mailbox runs under: exactly
// one replica reads it.
const leaseIMAP = "email-imap"

// Platform describes email to the registry (internal/platforms).
var Platform = platform.Descriptor{
	Name: Name,
	Section: func() platform.Section {
		return &Config{IMAP: IMAPConfig{Mailbox: "INBOX"}, RequireAuthResults: true}
	},
	EnvDefaults: []platform.EnvDefault{
		{Key: "imap.password", Env: "EMAIL_PASSWORD"},
		{Key: "smtp.password", Env: "EMAIL_PASSWORD"},
	},
	Validate: validate,
	New:      newFromConfig,
	Runners:  runners,
	Hint: "Email: your answer is sent as one mail, plain text with an HTML alternative rendered from your Markdown; " +
		"write like a short, friendly email (no greeting line needed), simple Markdown only, no tables.",
	// A user's chat is their address: email:user:ops@example.com is reached at email:ops@example.com.
	DirectChat: func(userID string) (string, bool) {
		_, err := recipient(userID)
		return userID, err == nil
	},
	Doctor: []platform.Check{
		{Name: "email imap", Net: true, Run: doctorIMAP},
		{Name: "email smtp", Net: true, Run: doctorSMTP},
	},
	// A thread id is the root Message-ID as the adapter wrote it; any token.
	ChatID: func(chatID, _ string) error { return checkAddress(chatID, "email:") },
	UserID: func(id string) error { return checkAddress(id, "email:user:") },
}

// checkAddress refuses a chat or user id the adapter never produces (it
// writes bare addresses in lower case), so an address in config.yaml cannot
// silently miss its chat; prefix is how the id is written.
func checkAddress(id, prefix string) error {
	if _, err := recipient(id); err != nil {
		return fmt.Errorf("not an email address: write %s<address>, e.g. %sops@example.com", prefix, prefix)
	}
	if low := strings.ToLower(id); low != id {
		return fmt.Errorf("addresses are matched in lower case: %s%s", prefix, low)
	}
	return nil
}

func validate(s platform.Section, _ platform.Env, v *platform.Checker) {
	c := s.(*Config)
	if c.Address != "" {
		if a, err := mail.ParseAddress(c.Address); err != nil || a.Address != c.Address {
			v.Fail("address", "%q is not a bare email address (bot@example.com)", platform.Truncate(c.Address, 80))
		}
	}
	if c.IMAP.URL != "" {
		if _, err := parseServerURL(c.IMAP.URL, "imaps", "imap"); err != nil {
			v.Fail("imap.url", "%v", err)
		}
	}
	if c.SMTP.URL != "" {
		if _, err := parseServerURL(c.SMTP.URL, "smtps", "smtp"); err != nil {
			v.Fail("smtp.url", "%v", err)
		}
	}
	if !c.Enabled {
		return
	}
	const because = "channels.email is enabled"
	v.Require("address", c.Address != "", because)
	v.Require("imap.url", c.IMAP.URL != "", because)
	v.Require("imap.password", c.IMAP.Password.IsSet(), because)
	v.Require("smtp.url", c.SMTP.URL != "", because)
	v.Require("smtp.password", c.SMTP.Password.IsSet(), because)
	if c.RequireAuthResults && c.AuthServID == "" {
		v.Fail("authserv_id", "is empty: with require_auth_results on, name the receiving server's authserv-id "+
			"(the first word of the Authentication-Results header it adds, e.g. mx.example.com), or set require_auth_results: false "+
			"if anyone who can write a From line may talk to the bot")
	}
}

func optionsOf(c *Config, deps platform.Deps) Options {
	return Options{
		Address: c.Address,
		IMAPURL: c.IMAP.URL, IMAPUsername: c.IMAP.Username, IMAPPassword: c.IMAP.Password.Value(), Mailbox: c.IMAP.Mailbox,
		SMTPURL: c.SMTP.URL, SMTPUsername: c.SMTP.Username, SMTPPassword: c.SMTP.Password.Value(),
		RequireAuthResults: c.RequireAuthResults, AuthServID: c.AuthServID,
		KV: deps.KV, Logger: deps.Logger,
	}
}

func newFromConfig(_ context.Context, s platform.Section, deps platform.Deps) (channels.Channel, error) {
	return New(optionsOf(s.(*Config), deps))
}

// runners puts reading the mailbox under its lease.
func runners(_ context.Context, _ platform.Section, _ platform.Deps, ch channels.Channel) ([]platform.Runner, error) {
	a, ok := ch.(*Adapter)
	if !ok {
		return nil, nil
	}
	return []platform.Runner{{Lease: leaseIMAP, Run: a.Run, Ready: a.Ready}}, nil
}
