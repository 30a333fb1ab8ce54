package email

import (
	"context"
	"errors"
	"fmt"

	"github.com/emersion/go-imap/v2"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// This file is email's part of `switchboard doctor` (Platform.Doctor): log
// in to the IMAP server and select the mailbox; connect to the submission
// server, secure the connection and authenticate (no mail is sent).

const (
	imapFix = "check channels.email.imap (url imaps://host:993 or imap://host:143, username, EMAIL_PASSWORD) and that the mailbox exists"
	smtpFix = "check channels.email.smtp (url smtps://host:465 or smtp://host:587, username, EMAIL_PASSWORD)"
)

func doctorAdapter(s platform.Section, deps platform.Deps) (*Adapter, error) {
	o := optionsOf(s.(*Config), deps)
	if deps.Timeout > 0 {
		o.Timeout = deps.Timeout
	}
	return New(o)
}

// doctorIMAP logs in and selects the mailbox.
func doctorIMAP(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	c := s.(*Config)
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	if !c.IMAP.Password.IsSet() {
		return fail("channels.email is enabled but imap.password is empty", "set EMAIL_PASSWORD (or channels.email.imap.password)")
	}
	a, err := doctorAdapter(s, deps)
	if err != nil {
		return fail(platform.OneLine(err.Error()), imapFix)
	}
	shown := shownURL(c.IMAP.URL)
	cl, err := a.dialIMAP(ctx, nil)
	if err != nil {
		return netFail(ctx, err, shown, deps, imapFix)
	}
	defer func() { _ = cl.Close() }()
	var ie *imap.Error
	if err := cl.Login(a.opts.IMAPUsername, a.opts.IMAPPassword).Wait(); err != nil {
		if errors.As(err, &ie) {
			return fail(fmt.Sprintf("the IMAP server %s rejected the login as %s: %s", shown, a.opts.IMAPUsername, oneLine(ie.Text)), imapFix)
		}
		return netFail(ctx, err, shown, deps, imapFix)
	}
	sel, err := cl.Select(a.opts.Mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		return fail(fmt.Sprintf("IMAP at %s: logged in as %s, but mailbox %q: %s", shown, a.opts.IMAPUsername, a.opts.Mailbox, oneLine(err.Error())), imapFix)
	}
	caps := cl.Caps()
	_ = cl.Logout().Wait()
	var f platform.Findings
	f.Add(platform.StatusOK, fmt.Sprintf("IMAP at %s: logged in as %s, mailbox %q has %d mail(s)", shown, a.opts.IMAPUsername, a.opts.Mailbox, sel.NumMessages), "")
	if !caps.Has(imap.CapIdle) && !caps.Has(imap.CapIMAP4rev2) {
		f.Add(platform.StatusWarn, "the server has no IDLE: new mail is noticed by polling every 30s", "")
	}
	return f.Result()
}

// doctorSMTP connects, secures and authenticates to the submission server.
func doctorSMTP(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	c := s.(*Config)
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	if !c.SMTP.Password.IsSet() {
		return fail("channels.email is enabled but smtp.password is empty", "set EMAIL_PASSWORD (or channels.email.smtp.password)")
	}
	a, err := doctorAdapter(s, deps)
	if err != nil {
		return fail(platform.OneLine(err.Error()), smtpFix)
	}
	shown := shownURL(c.SMTP.URL)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cl, err := a.dialSMTP(ctx)
	if err != nil {
		if what, fix, ok := platform.DescribeNetErr(ctx, err, shown, deps.Timeout); ok {
			return fail(what, fix+" (channels.email.smtp.url)")
		}
		return fail(fmt.Sprintf("SMTP at %s: %s", shown, platform.OneLine(err.Error())), smtpFix)
	}
	_ = cl.Quit()
	return platform.CheckResult{Status: platform.StatusOK, Finding: fmt.Sprintf("SMTP at %s: authenticated as %s", shown, a.opts.SMTPUsername)}
}

func netFail(ctx context.Context, err error, shown string, deps platform.Deps, fix string) platform.CheckResult {
	if what, nfix, ok := platform.DescribeNetErr(ctx, err, shown, deps.Timeout); ok {
		return platform.CheckResult{Status: platform.StatusFail, Finding: what, Fix: nfix + " (channels.email.imap.url)"}
	}
	return platform.CheckResult{Status: platform.StatusFail, Finding: fmt.Sprintf("IMAP at %s: %s", shown, platform.OneLine(err.Error())), Fix: fix}
}
