package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/switchboard-bot/switchboard/channels"
	"github.com/switchboard-bot/switchboard/channels/platform"
)

// Config is the channels.whatsapp section of config.yaml.
type Config struct {
	Enabled       bool            `yaml:"enabled"`
	PhoneNumberID string          `yaml:"phone_number_id"`
	AccessToken   platform.Secret `yaml:"access_token"`
	AppSecret     platform.Secret `yaml:"app_secret"`
	VerifyToken   platform.Secret `yaml:"verify_token"`
	APIURL        string          `yaml:"api_url"` // Graph API root; the /vNN.N prefix is the adapter's
	// Templates by purpose (greeting, reminder): sent outside the 24-hour
	// window, the text as the template's one body variable {{1}}.
	Templates map[string]TemplateConfig `yaml:"templates"`
}

// TemplateConfig is one entry of channels.whatsapp.templates.
type TemplateConfig struct {
	Name     string `yaml:"name"`
	Language string `yaml:"language"`
}

// IsEnabled implements platform.Section.
func (c *Config) IsEnabled() bool { return c.Enabled }

// ConfigIn returns the WhatsApp section of s.
func ConfigIn(s platform.Sections) *Config { return platform.Get[*Config](s, Name) }

// Platform describes WhatsApp to the registry (internal/platforms).
var Platform = platform.Descriptor{
	Name:    Name,
	Section: func() platform.Section { return &Config{Templates: map[string]TemplateConfig{}} },
	EnvDefaults: []platform.EnvDefault{
		{Key: "access_token", Env: "WHATSAPP_ACCESS_TOKEN"},
		{Key: "app_secret", Env: "WHATSAPP_APP_SECRET"},
		{Key: "verify_token", Env: "WHATSAPP_VERIFY_TOKEN"},
	},
	Validate: validate,
	New:      newFromConfig,
	Hint: "WhatsApp: your Markdown is converted to WhatsApp formatting; use bold, italic, strikethrough, code and code blocks, " +
		"simple lists and quotes; no tables or headings; links show as text followed by the URL.",
	// Every chat is the user's own: the chat id is the user's E.164 number.
	DirectChat: func(userID string) (string, bool) { return userID, userID != "" },
	Routes: []platform.Route{
		{Method: "GET", Path: WebhookPath},
		{Method: "POST", Path: WebhookPath},
	},
	WebhookMode: func(s platform.Section) string {
		if c := s.(*Config); c.Enabled {
			return "channels.whatsapp (webhook only)"
		}
		return ""
	},
	Doctor:        []platform.Check{{Name: Name, Net: true, Run: doctorAPI}},
	WebhookDoctor: doctorWebhook,
	ChatID: func(chatID, threadID string) error {
		if threadID != "" {
			return errors.New("WhatsApp chats have no threads: write whatsapp:+<number>")
		}
		return checkNumber(chatID, "whatsapp:")
	},
	UserID: func(id string) error { return checkNumber(id, "whatsapp:user:") },
}

// e164RE is a WhatsApp chat or user id as the adapter writes it: the E.164
// number with its '+'.
var e164RE = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// checkNumber refuses a chat or user id the adapter never produces, so an
// address in config.yaml cannot silently miss its chat: "4915112345678"
// (the webhook's wa_id form) is refused with the '+' form to write.
func checkNumber(id, prefix string) error {
	if e164RE.MatchString(id) {
		return nil
	}
	if d := digitsOnly(id); d != "" && e164RE.MatchString("+"+d) && strings.Trim(id, "0123456789+ -()") == "" {
		return fmt.Errorf("a WhatsApp number is written in E.164 form with its '+' and digits only: write %s+%s", prefix, d)
	}
	return fmt.Errorf("a WhatsApp chat is the user's phone number in E.164 form ('+', country code, number), e.g. %s+4915112345678", prefix)
}

// Purposes a template may be configured for.
var templatePurposes = []string{string(channels.PurposeGreeting), string(channels.PurposeReminder)}

var (
	digitsRE   = regexp.MustCompile(`^[0-9]{1,32}$`)
	versionRE  = regexp.MustCompile(`/v[0-9]+\.[0-9]+/?$`)
	templateRE = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)
	languageRE = regexp.MustCompile(`^[a-z]{2,3}(_[A-Za-z]{2,4})?$`)
)

func validate(s platform.Section, env platform.Env, v *platform.Checker) {
	c := s.(*Config)
	if c.APIURL != "" {
		if err := v.CheckURL(c.APIURL, "http", "https"); err != nil {
			v.Fail("api_url", "%v", err)
		} else if versionRE.MatchString(c.APIURL) {
			v.Fail("api_url", "must be the Graph API root without the version (e.g. https://graph.facebook.com): the adapter adds /%s", APIVersion)
		}
	}
	if c.PhoneNumberID != "" && !digitsRE.MatchString(c.PhoneNumberID) {
		v.Fail("phone_number_id", "must be the phone number's numeric id from WhatsApp Manager → API setup (not the phone number), got %q", platform.Truncate(c.PhoneNumberID, 40))
	}
	names := make([]string, 0, len(c.Templates))
	for k := range c.Templates {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t := c.Templates[k]
		key := "templates." + k
		v.OneOf(key, k, templatePurposes...)
		if !templateRE.MatchString(t.Name) {
			v.Fail(key+".name", "must be the template's name as approved in WhatsApp Manager (lowercase letters, digits, _), got %q", platform.Truncate(t.Name, 60))
		}
		if !languageRE.MatchString(t.Language) {
			v.Fail(key+".language", "must be the template's language code (e.g. en_US, de), got %q", platform.Truncate(t.Language, 20))
		}
	}
	if !c.Enabled {
		return
	}
	if c.PhoneNumberID == "" {
		v.Fail("phone_number_id", "is empty: set the business phone number's id (WhatsApp Manager → API setup)")
	}
	v.Require("access_token", c.AccessToken.IsSet(), "channels.whatsapp is enabled")
	v.Require("app_secret", c.AppSecret.IsSet(), "channels.whatsapp is enabled (webhook signatures are checked with it)")
	v.Require("verify_token", c.VerifyToken.IsSet(), "channels.whatsapp is enabled (Meta verifies the webhook with it)")
	if env.Listen == "" {
		v.FailGlobal("server.listen", "is empty: channels.whatsapp receives its messages through the webhook on the HTTP server")
	}
}

func newFromConfig(_ context.Context, s platform.Section, deps platform.Deps) (channels.Channel, error) {
	c := s.(*Config)
	return New(c.options(deps))
}

func (c *Config) options(deps platform.Deps) Options {
	tpls := make(map[string]Template, len(c.Templates))
	for k, t := range c.Templates {
		tpls[k] = Template(t)
	}
	return Options{
		PhoneNumberID: c.PhoneNumberID, AccessToken: c.AccessToken.Value(), AppSecret: c.AppSecret.Value(),
		VerifyToken: c.VerifyToken.Value(), APIURL: c.APIURL, Templates: tpls,
		HTTPClient: deps.HTTPClient, Logger: deps.Logger,
	}
}
