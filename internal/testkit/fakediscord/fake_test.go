package fakediscord

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func readPayload(t *testing.T, ws *websocket.Conn) gatewayPayload {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute)) // a hang detector
	mt, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if mt != websocket.TextMessage {
		t.Fatalf("got a binary frame although compress was false")
	}
	var p gatewayPayload
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return p
}

// TestGatewayUncompressedHandshake drives the gateway with a plain
// WebSocket client asking for no compression (discordgo itself always asks
// for it, so the adapter tests cover the zlib path).
func TestGatewayUncompressedHandshake(t *testing.T) {
	s := Start(t, Options{Token: "tok", HeartbeatInterval: 1234 * time.Millisecond})
	s.AddChannel("g1", "c1", "general")
	ws, _, err := websocket.DefaultDialer.Dial(s.GatewayURL()+"?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	hello := readPayload(t, ws)
	if hello.Op != opHello || !strings.Contains(string(hello.D), `"heartbeat_interval":1234`) {
		t.Fatalf("HELLO = %+v %s", hello, hello.D)
	}
	_ = ws.WriteJSON(map[string]any{"op": 2, "d": map[string]any{"token": "Bot tok", "intents": IntentGuilds | IntentGuildMessages, "compress": false, "properties": map[string]string{"os": "linux"}}})
	ready := readPayload(t, ws)
	if ready.T == nil || *ready.T != "READY" || ready.S == nil || *ready.S != 1 {
		t.Fatalf("first dispatch = %+v", ready)
	}
	var r struct {
		SessionID string `json:"session_id"`
		Resume    string `json:"resume_gateway_url"`
		User      User   `json:"user"`
	}
	_ = json.Unmarshal(ready.D, &r)
	if r.SessionID == "" || r.Resume == "" || r.User.ID != DefaultBotID || !r.User.Bot {
		t.Fatalf("READY = %s", ready.D)
	}
	if gc := readPayload(t, ws); gc.T == nil || *gc.T != "GUILD_CREATE" || !strings.Contains(string(gc.D), `"c1"`) {
		t.Fatalf("want GUILD_CREATE with c1, got %+v", gc)
	}
	_ = ws.WriteJSON(map[string]any{"op": 1, "d": 2})
	if ack := readPayload(t, ws); ack.Op != opHeartbeatACK {
		t.Fatalf("heartbeat answered with op %d", ack.Op)
	}
	m := s.UserSays("c1", "u1", "hi", SayOptions{GuildID: "g1"})
	ev := readPayload(t, ws)
	if ev.T == nil || *ev.T != "MESSAGE_CREATE" || *ev.S != 3 || !strings.Contains(string(ev.D), m.ID) {
		t.Fatalf("dispatch = %+v %s", ev, ev.D)
	}
	// No MESSAGE_CONTENT intent: guild content arrives empty, as on Discord.
	if strings.Contains(string(ev.D), `"content":"hi"`) {
		t.Errorf("content delivered without the MESSAGE_CONTENT intent")
	}
	// Closing with 1000 invalidates the session: a RESUME is refused.
	_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""))
	s.WaitFor(t, 5*time.Second, "close 1000 recorded", func() bool { return len(s.ClientCloseCodes()) == 1 })
	ws2, _, err := websocket.DefaultDialer.Dial(s.GatewayURL()+"?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	readPayload(t, ws2) // HELLO
	_ = ws2.WriteJSON(map[string]any{"op": 6, "d": map[string]any{"token": "Bot tok", "session_id": r.SessionID, "seq": 3}})
	if inv := readPayload(t, ws2); inv.Op != opInvalidSession || string(inv.D) != "false" {
		t.Fatalf("RESUME of a closed session answered %+v", inv)
	}
}

func TestRESTShapesAndAuth(t *testing.T) {
	s := Start(t, Options{Token: "tok"})
	var ids []string
	for _, text := range []string{"a", "b", "c"} {
		ids = append(ids, s.UserSays("c1", "u1", text, SayOptions{GuildID: "g1"}).ID)
	}
	get := func(path, auth string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, _ := get("/api/v9/channels/c1/messages", "Bot wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	code, body := get("/api/v9/channels/c1/messages?after="+ids[0]+"&limit=100", "Bot tok")
	var ms []Message
	if err := json.Unmarshal(body, &ms); err != nil || code != http.StatusOK {
		t.Fatalf("history: %d %s", code, body)
	}
	if len(ms) != 2 || ms[0].ID != ids[2] || ms[1].ID != ids[1] {
		t.Fatalf("history after %s = %+v; want [c b] newest first", ids[0], ms)
	}
	if ms[0].GuildID != "" || ms[0].Member != nil {
		t.Errorf("REST message carries guild_id/member: %+v", ms[0])
	}
}

// TestShardRouting: with shards, a guild's events reach only the session of
// shard (guild_id >> 22) % num_shards and DMs only shard 0, and a second
// shard's IDENTIFY does not end the first shard's session.
func TestShardRouting(t *testing.T) {
	s := Start(t, Options{Token: "tok"})
	const g0, g1 = "0", "4194304" // 0>>22 = 0, 4194304>>22 = 1
	s.AddChannel(g0, "c0", "zero")
	s.AddChannel(g1, "c1", "one")
	conns := make([]*websocket.Conn, 2)
	for i := range conns {
		ws, _, err := websocket.DefaultDialer.Dial(s.GatewayURL()+"?v=9&encoding=json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		readPayload(t, ws) // HELLO
		_ = ws.WriteJSON(map[string]any{"op": 2, "d": map[string]any{"token": "Bot tok", "shard": []int{i, 2},
			"intents": IntentGuildMessages | IntentDirectMessages | IntentMessageContent, "properties": map[string]string{}}})
		if ready := readPayload(t, ws); ready.T == nil || *ready.T != "READY" {
			t.Fatalf("shard %d: first dispatch %+v", i, ready)
		}
		conns[i] = ws
	}
	ids := map[string]string{}
	for _, tc := range []struct{ channel, guild string }{{"c0", g0}, {"c1", g1}, {"dm9", ""}} {
		ids[tc.channel] = s.UserSays(tc.channel, "u1", "to "+tc.channel, SayOptions{GuildID: tc.guild}).ID
	}
	want := [][]string{{"c0", "dm9"}, {"c1"}}
	for shard, ws := range conns {
		var got []string
		read := func(until time.Time) bool { // one message; false at the deadline
			_ = ws.SetReadDeadline(until)
			_, data, err := ws.ReadMessage()
			if err != nil {
				return false
			}
			for ch, id := range ids {
				if strings.Contains(string(data), `"id":"`+id+`"`) {
					got = append(got, ch)
				}
			}
			return true
		}
		// The shard's messages (however late on a loaded machine; a hang
		// detector bounds the wait), then a moment for any that must not come.
		for hang := time.Now().Add(time.Minute); len(got) < len(want[shard]) && read(hang); {
		}
		for settle := time.Now().Add(300 * time.Millisecond); read(settle); {
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want[shard], ",") {
			t.Errorf("shard %d got messages of %v, want %v", shard, got, want[shard])
		}
	}
}
