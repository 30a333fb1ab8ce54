package config

import (
	"strings"
	"testing"

	"github.com/switchboard-bot/switchboard/channels/discord"
	"github.com/switchboard-bot/switchboard/channels/slack"
	"github.com/switchboard-bot/switchboard/channels/telegram"
)

// Issue 13 defect 11: credentials inside URL-valued keys were printed by
// `config get`. Every rendering of the config redacts them.
func TestConfigRenderingRedactsURLCredentials(t *testing.T) {
	c := Default()
	c.LLM.BaseURL = "https://alice:pw-llm-0001@llm.example.com/v1?api-key=sk-query-0002"
	telegram.ConfigIn(c.Channels).APIURL = "https://tg:pw-tg-0003@tg.example.com"
	telegram.ConfigIn(c.Channels).WebhookURL = "https://bot.example.com/webhooks/telegram?token=tok-0004"
	discord.ConfigIn(c.Channels).APIURL = "https://dc:pw-dc-0005@dc.example.com"
	discord.ConfigIn(c.Channels).GatewayURL = "wss://gw.example.com/?secret=sec-0006"
	slack.ConfigIn(c.Channels).APIURL = "https://sl:pw-sl-0007@slack.example.com/api/"
	secrets := []string{"pw-llm-0001", "sk-query-0002", "pw-tg-0003", "tok-0004", "pw-dc-0005", "sec-0006", "pw-sl-0007"}
	var outs []string
	for _, key := range []string{"llm", "llm.base_url", "channels", "channels.telegram.webhook_url", "channels.discord.gateway_url"} {
		v, err := Get(c, key)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, "config get "+key+":\n"+v)
	}
	y, err := c.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(y))
	m := c.Redacted()
	llm, _ := m["llm"].(map[string]any)
	outs = append(outs, llm["base_url"].(string))
	all := strings.Join(outs, "\n")
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("a URL credential (%s) is printed:\n%s", s, all)
		}
	}
	if !strings.Contains(all, "https://alice:[redacted]@llm.example.com/v1?api-key=[redacted]") {
		t.Errorf("llm.base_url is not shown redacted but readable:\n%s", all)
	}
}
