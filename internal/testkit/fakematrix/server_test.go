package fakematrix

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func call(t *testing.T, s *Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// The wire facts the adapter relies on.
func TestWire(t *testing.T) {
	s := New(t, Options{})
	s.AddRoom(Room{ID: "!r:fake.test", Members: []string{"@u:fake.test"}, Joined: true})
	tests := []struct {
		name, method, path, token, body string
		status                          int
		errcode                         string
	}{
		{"no token", "GET", "/_matrix/client/v3/account/whoami", "", "", 401, "M_MISSING_TOKEN"},
		{"wrong token", "GET", "/_matrix/client/v3/account/whoami", "nope", "", 401, "M_UNKNOWN_TOKEN"},
		{"legacy media", "GET", "/_matrix/media/v3/download/fake.test/x", s.Token(), "", 404, "M_UNRECOGNIZED"},
		{"not in room", "PUT", "/_matrix/client/v3/rooms/!other:fake.test/send/m.room.message/t1", s.Token(), `{}`, 403, "M_FORBIDDEN"},
		{"bad since", "GET", "/_matrix/client/v3/sync?since=zzz", s.Token(), "", 400, "M_INVALID_PARAM"},
	}
	for _, tc := range tests {
		if st, out := call(t, s, tc.method, tc.path, tc.token, tc.body); st != tc.status || out["errcode"] != tc.errcode {
			t.Errorf("%s: %d %v, want %d %s", tc.name, st, out, tc.status, tc.errcode)
		}
	}
	// PUT /send is idempotent per transaction id.
	_, a := call(t, s, "PUT", "/_matrix/client/v3/rooms/!r:fake.test/send/m.room.message/tx", s.Token(), `{"msgtype":"m.text","body":"x"}`)
	_, b := call(t, s, "PUT", "/_matrix/client/v3/rooms/!r:fake.test/send/m.room.message/tx", s.Token(), `{"msgtype":"m.text","body":"x"}`)
	if a["event_id"] == nil || a["event_id"] != b["event_id"] || len(s.Sent("!r:fake.test")) != 1 {
		t.Errorf("two sends with one txn id: %v %v, %d messages", a, b, len(s.Sent("!r:fake.test")))
	}
	// A since token given again returns the same events again.
	_, first := call(t, s, "GET", "/_matrix/client/v3/sync?since=s0&timeout=0", s.Token(), "")
	_, again := call(t, s, "GET", "/_matrix/client/v3/sync?since=s0&timeout=0", s.Token(), "")
	j1, _ := json.Marshal(first["rooms"])
	j2, _ := json.Marshal(again["rooms"])
	if string(j1) != string(j2) || !strings.Contains(string(j1), `"body":"x"`) {
		t.Errorf("sync replay differs or lacks the event:\n%s\n%s", j1, j2)
	}
}
