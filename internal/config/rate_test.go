package config

import (
	"github.com/switchboard-bot/switchboard/channels/telegram"
	"strings"
	"testing"
)

func TestTelegramRateDefaultsAreTelegramsLimits(t *testing.T) {
	got := telegram.ConfigIn(Default().Channels).Rate
	want := Rate{PerChat: 1, PerChatBurst: 1, Global: 30, GlobalBurst: 30}
	if got != want {
		t.Fatalf("default channels.telegram.rate = %+v, want %+v", got, want)
	}
}

func TestTelegramRateKeys(t *testing.T) {
	c := mustParse(t, `
channels:
  telegram:
    rate:
      per_chat: 0.5
      global: 1000
      global_burst: 100
`, emptyEnv)
	got := telegram.ConfigIn(c.Channels).Rate
	// Keys left out keep their defaults.
	want := Rate{PerChat: 0.5, PerChatBurst: 1, Global: 1000, GlobalBurst: 100}
	if got != want {
		t.Fatalf("rate = %+v, want %+v", got, want)
	}
	if r := telegram.ConfigIn(mustParse(t, "channels:\n  telegram:\n    rate: {per_chat: 0, global: 0}\n", emptyEnv).Channels).Rate; r.PerChat != 0 || r.Global != 0 {
		t.Fatalf("0 (no limit) not accepted: %+v", r)
	}
}

func TestTelegramRateValidation(t *testing.T) {
	cases := []struct {
		name, rate, wantKey, wantText string
	}{
		{"negative per chat", "{per_chat: -1}", "channels.telegram.rate.per_chat", "from 0 (no limit) to 10000"},
		{"global too high", "{global: 20000}", "channels.telegram.rate.global", "from 0 (no limit) to 10000"},
		{"NaN", "{global: .nan}", "channels.telegram.rate.global", ""},
		{"infinite", "{per_chat: .inf}", "channels.telegram.rate.per_chat", ""},
		{"zero burst", "{per_chat_burst: 0}", "channels.telegram.rate.per_chat_burst", "from 1 to 10000"},
		{"huge burst", "{global_burst: 100000}", "channels.telegram.rate.global_burst", "from 1 to 10000"},
		{"not a number", "{per_chat: fast}", "channels.telegram.rate.per_chat", ""},
		{"unknown key", "{per_second: 3}", "per_second", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := parseErr(t, "channels:\n  telegram:\n    rate: "+tc.rate+"\n", emptyEnv)
			if !strings.Contains(msg, tc.wantKey) || !strings.Contains(msg, tc.wantText) {
				t.Fatalf("error %q; want it to name %s and say %q", msg, tc.wantKey, tc.wantText)
			}
		})
	}
}
