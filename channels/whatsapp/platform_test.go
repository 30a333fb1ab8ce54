package whatsapp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-bot/switchboard/channels/platform"
	"github.com/switchboard-bot/switchboard/internal/testkit/fakewhatsapp"
)

func problems(c *Config, listen string) string {
	var v platform.Checker
	validate(c, platform.Env{Listen: listen}, &v)
	var out []string
	for _, p := range v.Problems {
		out = append(out, p.Key+": "+p.Msg+p.Because)
	}
	return strings.Join(out, "\n")
}

// The section's validation names each wrong key.
func TestValidate(t *testing.T) {
	ok := func() *Config {
		return &Config{Enabled: true, PhoneNumberID: "106540352242922", AccessToken: platform.NewSecret("t"),
			AppSecret: platform.NewSecret("s"), VerifyToken: platform.NewSecret("v"),
			Templates: map[string]TemplateConfig{"greeting": {Name: "daily_hello", Language: "en_US"}}}
	}
	cases := []struct {
		name   string
		mod    func(*Config)
		listen string
		want   []string // substrings; none = valid
	}{
		{"valid", func(*Config) {}, "127.0.0.1:8787", nil},
		{"disabled and empty", func(c *Config) { *c = Config{} }, "", nil},
		{"no listen", func(*Config) {}, "", []string{"server.listen: is empty"}},
		{"missing secrets", func(c *Config) {
			c.AccessToken, c.AppSecret, c.VerifyToken = platform.Secret{}, platform.Secret{}, platform.Secret{}
		}, "x:1", []string{"access_token: ", "app_secret: ", "verify_token: "}},
		{"phone number instead of id", func(c *Config) { c.PhoneNumberID = "+49 151 1234" }, "x:1", []string{"phone_number_id: must be the phone number's numeric id"}},
		{"versioned api_url", func(c *Config) { c.APIURL = "https://graph.facebook.com/v19.0" }, "x:1", []string{"api_url: must be the Graph API root without the version"}},
		{"bad template", func(c *Config) {
			c.Templates = map[string]TemplateConfig{"hello": {Name: "Daily Hello", Language: "english"}}
		}, "x:1", []string{"templates.hello: must be one of greeting | reminder", "templates.hello.name: ", "templates.hello.language: "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.mod(c)
			got := problems(c, tc.listen)
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("problems:\n%s", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("want %q among:\n%s", w, got)
				}
			}
		})
	}
}

// doctor checks the token, the phone number id and the app secret against
// the server.
func TestDoctor(t *testing.T) {
	fake := fakewhatsapp.New(t, fakewhatsapp.Options{})
	good := func() *Config {
		return &Config{Enabled: true, PhoneNumberID: fake.PhoneNumberID(), AccessToken: platform.NewSecret(fake.AccessToken()),
			AppSecret: platform.NewSecret(fake.AppSecret()), VerifyToken: platform.NewSecret("v"), APIURL: fake.URL()}
	}
	cases := []struct {
		name   string
		mod    func(*Config)
		status string
		want   string
	}{
		{"all good", func(*Config) {}, platform.StatusOK, "app secret matches"},
		{"wrong token", func(c *Config) { c.AccessToken = platform.NewSecret("EAAwrong-token") }, platform.StatusFail, "refused the access token"},
		{"wrong app secret", func(c *Config) { c.AppSecret = platform.NewSecret("another-apps-secret") }, platform.StatusFail, "refused the app secret"},
		{"wrong phone number id", func(c *Config) { c.PhoneNumberID = "123" }, platform.StatusFail, "phone number id 123 is unknown"},
		{"server down", func(c *Config) { c.APIURL = "http://127.0.0.1:1" }, platform.StatusFail, "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mod(c)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := doctorAPI(ctx, c, platform.Deps{Timeout: 20 * time.Second})
			if r.Status != tc.status || !strings.Contains(r.Finding, tc.want) {
				t.Fatalf("got %s %q (fix %q), want %s with %q", r.Status, r.Finding, r.Fix, tc.status, tc.want)
			}
			for _, s := range []string{"EAAwrong-token", "another-apps-secret", fake.AccessToken(), fake.AppSecret()} {
				if strings.Contains(r.Finding+r.Fix, s) {
					t.Errorf("a secret appears in the result: %+v", r)
				}
			}
		})
	}
}
