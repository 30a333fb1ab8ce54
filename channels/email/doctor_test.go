package email

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// TestDoctor: doctor's checks log in to both servers and say what is wrong
// in words an operator can act on, never showing a password.
func TestDoctor(t *testing.T) {
	w := newWorld(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "imap://" + closed.Addr().String()
	_ = closed.Close()
	base := func() *Config {
		c := Platform.Section().(*Config)
		c.Enabled, c.Address, c.AuthServID = true, botAddr, authServID
		c.IMAP.URL, c.IMAP.Username, c.IMAP.Password = w.imap.URL(), botUser, platform.NewSecret(botPass)
		c.SMTP.URL, c.SMTP.Password = w.smtp.URL(), platform.NewSecret(smtpPass)
		return c
	}
	tests := []struct {
		name         string
		edit         func(*Config)
		check        int // 0 imap, 1 smtp
		status, want string
	}{
		{"imap ok", func(*Config) {}, 0, platform.StatusOK, "logged in as bot, mailbox \"INBOX\" has 0 mail(s)"},
		{"smtp ok", func(*Config) {}, 1, platform.StatusOK, "authenticated as " + botAddr},
		{"imap wrong password", func(c *Config) { c.IMAP.Password = platform.NewSecret("wrong-imap-pw") }, 0, platform.StatusFail, "rejected the login as bot"},
		{"imap no such mailbox", func(c *Config) { c.IMAP.Mailbox = "Nope" }, 0, platform.StatusFail, `mailbox "Nope"`},
		{"imap refused", func(c *Config) { c.IMAP.URL = refused }, 0, platform.StatusFail, "connection refused"},
		{"smtp wrong password", func(c *Config) { c.SMTP.Password = platform.NewSecret("wrong-smtp-pw") }, 1, platform.StatusFail, "AUTH as " + botAddr},
		{"smtp no password", func(c *Config) { c.SMTP.Password = platform.Secret{} }, 1, platform.StatusFail, "smtp.password is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(c)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := Platform.Doctor[tc.check].Run(ctx, c, platform.Deps{Timeout: 20 * time.Second})
			if r.Status != tc.status || !strings.Contains(r.Finding, tc.want) {
				t.Errorf("%s: %s (fix: %s); want %s containing %q", Platform.Doctor[tc.check].Name, r.Status+": "+r.Finding, r.Fix, tc.status, tc.want)
			}
			for _, secret := range []string{botPass, smtpPass, "wrong-imap-pw", "wrong-smtp-pw"} {
				if strings.Contains(r.Finding+r.Fix, secret) {
					t.Errorf("the result shows a password: %+v", r)
				}
			}
		})
	}
}
