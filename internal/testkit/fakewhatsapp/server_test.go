package fakewhatsapp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func call(t *testing.T, s *Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func code(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// The Graph API's documented answers: 401/190 without the token, a version
// prefix required, 131047 outside the 24-hour window, the wamid of a sent
// message inside it.
func TestGraphWireFacts(t *testing.T) {
	s := New(t, Options{})
	msgs := "/v23.0/" + s.PhoneNumberID() + "/messages"
	text := `{"messaging_product":"whatsapp","to":"4915112345678","type":"text","text":{"body":"hi"}}`
	if st, m := call(t, s, "POST", msgs, "", text); st != 401 || code(m) != 190 {
		t.Errorf("no token: %d %v", st, m)
	}
	if st, _ := call(t, s, "POST", "/"+s.PhoneNumberID()+"/messages", s.AccessToken(), text); st != 400 {
		t.Errorf("no version: %d", st)
	}
	if st, m := call(t, s, "POST", msgs, s.AccessToken(), text); st != 400 || code(m) != 131047 {
		t.Errorf("outside the window: %d %v", st, m)
	}
	u := User{WaID: "4915112345678", Name: "Ada"}
	s.Send(u, s.Text(u, "hello")) // opens the window; no webhook set
	st, m := call(t, s, "POST", msgs, s.AccessToken(), text)
	list, _ := m["messages"].([]any)
	if st != 200 || len(list) != 1 {
		t.Fatalf("inside the window: %d %v", st, m)
	}
	if sent := s.Sent("+4915112345678"); len(sent) != 1 || sent[0].Text != "hi" {
		t.Errorf("recorded %+v", sent)
	}
	if st, m := call(t, s, "GET", "/v23.0/"+s.PhoneNumberID()+"?appsecret_proof=00", s.AccessToken(), ""); st != 400 || code(m) != 100 {
		t.Errorf("bad appsecret_proof: %d %v", st, m)
	}
}

// A delivery not answered 200 is sent again until it is.
func TestWebhookRetried(t *testing.T) {
	s := New(t, Options{})
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hub-Signature-256") != s.Sign(mustRead(r)) {
			t.Error("a delivery without the app's signature")
		}
		if n.Add(1) < 3 {
			w.WriteHeader(500)
		}
	}))
	defer hs.Close()
	s.SetWebhook(hs.URL)
	u := User{WaID: "49151", Name: "A"}
	d := s.Send(u, s.Text(u, "x"))
	d.Wait(t, 10*time.Second)
	if at := d.Attempts(); len(at) != 3 || at[2] != 200 {
		t.Fatalf("attempts %v", at)
	}
}

func mustRead(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}
