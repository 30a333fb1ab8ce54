package platform

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"time"

	"github.com/switchboard-bot/switchboard/channels"
)

// Section is a platform's config section: a pointer to a struct with `yaml`
// tags whose first field is `Enabled bool yaml:"enabled"`.
type Section interface {
	// IsEnabled reports channels.<name>.enabled.
	IsEnabled() bool
}

// Sections holds every registered platform's section by name (the
// channels: key of config.yaml).
type Sections map[string]Section

// Env is what a section's validation may need from the rest of the config.
type Env struct {
	Listen string // server.listen ("" = no HTTP server)
}

// Deps are what a constructor gets from the daemon.
type Deps struct {
	HTTPClient *http.Client // nil = the adapter's default
	Logger     *slog.Logger
	// KV is the daemon's small key-value store (adapter cursors).
	KV KV
	// AllowBots is access.allow_bots (answer other bots' messages).
	AllowBots bool
	// Timeout bounds a doctor check's requests (doctor's per-check
	// timeout; the check's ctx carries the same deadline). 0 outside doctor.
	Timeout time.Duration
}

// KV is a small persistent key-value store.
type KV interface {
	KVGet(ctx context.Context, key string) ([]byte, bool, error)
	KVPut(ctx context.Context, key string, val []byte) error
}

// Runner is one receive loop of a channel that replicas share out by lease
// (Telegram long polling, one Discord gateway shard).
type Runner struct {
	// Lease names the cluster lease the loop runs under ("telegram-poll").
	Lease string
	Run   func(ctx context.Context, sink channels.Sink) error
	Ready func() bool
}

// Route is an HTTP route the daemon mounts for a platform; requests go to
// the registered channel of that name through channels.Webhook (404 while
// the channel is off or not in a webhook mode).
type Route struct {
	Method string // "POST"
	Path   string // "/webhooks/telegram"
}

// Descriptor describes one platform.
type Descriptor struct {
	// Name is the channels.<name> key and the target-address prefix.
	Name string
	// Section returns a new section holding the defaults.
	Section func() Section
	// EnvDefaults maps a section key ("token") to the environment variable
	// its value defaults to when the key is absent from the file.
	EnvDefaults []EnvDefault
	// CredentialEnv names further environment variables that hold the
	// platform's credentials (EnvDefaults' are counted already): doctor
	// scrubs their values from its report even when the config does not
	// reference them.
	CredentialEnv []string
	// Validate checks a section (Checker collects the problems); nil = none.
	Validate func(s Section, env Env, c *Checker)
	// New builds the channel from an enabled section. nil means the daemon
	// builds it itself (the console and the web chat, which belong to the
	// terminal and the web console).
	New func(ctx context.Context, s Section, deps Deps) (channels.Channel, error)
	// Runners, when set, splits the channel's receiving into leased loops
	// (replicas) or several loops (shards); nil or empty = ch.Run as is.
	Runners func(ctx context.Context, s Section, deps Deps, ch channels.Channel) ([]Runner, error)
	// Hint tells the model how the platform shows its Markdown.
	Hint string
	// DirectChat, when set, is the platform's direct-chat rule: the chat id
	// of the private chat with the user userID, when the platform can tell
	// it from the id alone (Telegram: the same number). The daemon uses it
	// to reach an admin listed by user id ("telegram:user:42").
	DirectChat func(userID string) (chatID string, ok bool)
	// Routes are the HTTP routes the daemon mounts for the platform.
	Routes []Route
	// WebhookMode names the webhook mode the section is in ("" = none): a
	// reverse proxy may then reach the HTTP server, so admin endpoints
	// need a token.
	WebhookMode func(s Section) string
	// Doctor lists the platform's checks (run when the section is enabled).
	Doctor []Check
	// ChatID, when set, checks the platform's own id syntax of a target's
	// chat id and thread id ("" when absent) as the operator writes them in
	// config.yaml; the error says how to write the address instead. nil =
	// any id (Registry.CheckTarget).
	ChatID func(chatID, threadID string) error
	// UserID, when set, checks the platform's user id syntax (the part after
	// "<channel>:user:"), as ChatID does for targets.
	UserID func(id string) error
	// WebhookDoctor, when set, checks the webhook setup of an enabled
	// section in a webhook mode (WebhookMode non-empty); its findings join
	// doctor's one "webhooks" check, in registry order.
	WebhookDoctor func(s Section, env Env) []CheckResult
}

// EnvDefault is a section key whose default is ${Env}.
type EnvDefault struct{ Key, Env string }

// Check is one doctor check of a platform.
type Check struct {
	Name string // "telegram", "telegram webhook"
	// Net is true for checks that call the platform (skipped offline).
	Net bool
	Run func(ctx context.Context, s Section, deps Deps) CheckResult
}

// Check statuses.
const (
	StatusOK   = "ok"
	StatusWarn = "warn"
	StatusFail = "fail"
	StatusSkip = "skip"
)

// CheckResult is what a check found and how to fix it.
type CheckResult struct {
	Status  string
	Finding string
	Fix     string
}

// Registry is an immutable, ordered set of platforms.
type Registry struct {
	list   []Descriptor
	byName map[string]int
}

// NewRegistry builds a registry; a descriptor without a name or section, or
// a name used twice, is an error.
func NewRegistry(ds ...Descriptor) (*Registry, error) {
	r := &Registry{byName: map[string]int{}}
	for _, d := range ds {
		if d.Name == "" || d.Section == nil {
			return nil, fmt.Errorf("platform %q: a descriptor needs a name and a section", d.Name)
		}
		if _, dup := r.byName[d.Name]; dup {
			return nil, fmt.Errorf("platform %q is registered twice", d.Name)
		}
		r.byName[d.Name] = len(r.list)
		r.list = append(r.list, d)
	}
	return r, nil
}

// MustRegistry is NewRegistry for package-level lists; it panics on error.
func MustRegistry(ds ...Descriptor) *Registry {
	r, err := NewRegistry(ds...)
	if err != nil {
		panic(err)
	}
	return r
}

// With returns a registry of r's platforms followed by ds.
func (r *Registry) With(ds ...Descriptor) (*Registry, error) {
	return NewRegistry(append(r.All(), ds...)...)
}

// All returns the descriptors in registration order.
func (r *Registry) All() []Descriptor { return append([]Descriptor(nil), r.list...) }

// Names returns the platform names in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.list))
	for i, d := range r.list {
		out[i] = d.Name
	}
	return out
}

// Lookup returns the descriptor of name.
func (r *Registry) Lookup(name string) (Descriptor, bool) {
	i, ok := r.byName[name]
	if !ok {
		return Descriptor{}, false
	}
	return r.list[i], true
}

// Defaults returns every platform's default section.
func (r *Registry) Defaults() Sections {
	s := make(Sections, len(r.list))
	for _, d := range r.list {
		s[d.Name] = d.Section()
	}
	return s
}

// Hints returns the formatting hint of every platform that has one.
func (r *Registry) Hints() map[string]string {
	m := map[string]string{}
	for _, d := range r.list {
		if d.Hint != "" {
			m[d.Name] = d.Hint
		}
	}
	return m
}

// Enabled reports whether name's section is present and enabled.
func (s Sections) Enabled(name string) bool {
	sec, ok := s[name]
	return ok && sec != nil && sec.IsEnabled()
}

// Get returns name's section as T (nil or zero when absent or of another
// type): telegram.ConfigIn(cfg.Channels) is Get[*telegram.Config](…).
func Get[T Section](s Sections, name string) T {
	t, _ := s[name].(T)
	return t
}

// Format prints the sections as map[name:{…}], each section by value, so
// every fmt verb renders their Secret fields redacted (a pointer inside a
// map would otherwise print its fields raw).
func (s Sections) Format(f fmt.State, verb rune) {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	_, _ = io.WriteString(f, "map[")
	for i, n := range names {
		if i > 0 {
			_, _ = io.WriteString(f, " ")
		}
		_, _ = io.WriteString(f, n+":")
		v := reflect.ValueOf(s[n])
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if !v.IsValid() {
			_, _ = io.WriteString(f, "<nil>")
			continue
		}
		_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), v.Interface())
	}
	_, _ = io.WriteString(f, "]")
}
