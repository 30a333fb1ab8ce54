package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is one request as the test server received it.
type seen struct {
	Method, Host, Path, UserAgent string
}

type site struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
	port string
}

// newSite starts a loopback server that records every request it gets.
func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, seen{r.Method, r.Host, r.URL.RequestURI(), r.UserAgent()})
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	s.port = u.Port()
	return s
}

func (s *site) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// at returns an http URL for host on the site's port.
func (s *site) at(host, path string) string { return "http://" + host + ":" + s.port + path }

// fakeResolver answers from a table; a host may have a sequence of answers
// (the last repeats), which is how DNS rebinding is played.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver(hosts map[string]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	for h, addrs := range hosts {
		for _, seq := range strings.Split(addrs, ";") {
			var as []netip.Addr
			for _, a := range strings.Split(seq, ",") {
				as = append(as, netip.MustParseAddr(a))
			}
			r.answers[h] = append(r.answers[h], as)
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok || network != "ip" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.calls[host], len(seq)-1)
	r.calls[host]++
	return seq[i], nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

func newFetch(t *testing.T, cfg WebFetchConfig) *WebFetch {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	f, err := NewWebFetch(cfg)
	if err != nil {
		t.Fatalf("NewWebFetch: %v", err)
	}
	return f
}

func fetch(f *WebFetch, rawURL string) (string, error) {
	args, _ := json.Marshal(map[string]string{"url": rawURL})
	return f.Call(context.Background(), args)
}

const articleHTML = `<!DOCTYPE html>
<html><head><title>Switchboard news</title>
<script>window.tracking = "SECRET-TRACKER";</script>
<style>.x{display:none}</style></head>
<body><h1>Hello</h1><p>First   paragraph with a <a href="/more">link</a>.</p>
<script>document.write("injected")</script>
<ul><li>one</li><li>two</li></ul></body></html>`

func TestWebFetchHTMLExtraction(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, articleHTML)
	})
	f := newFetch(t, WebFetchConfig{AllowPrivate: true, UserAgent: "switchboard-test/1"})
	got, err := fetch(f, s.URL+"/news#section")
	if err != nil {
		t.Fatal(err)
	}
	want := "URL: " + s.URL + "/news\nTitle: Switchboard news\n\n" +
		"# Hello\nFirst paragraph with a link (" + s.URL + "/more).\n- one\n- two"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"SECRET-TRACKER", "injected", "display:none", "<script"} {
		if strings.Contains(got, bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	reqs := s.requests()
	if len(reqs) != 1 || reqs[0].Method != http.MethodGet || reqs[0].Path != "/news" || reqs[0].UserAgent != "switchboard-test/1" {
		t.Errorf("server saw %+v", reqs)
	}
}

func TestWebFetchContentTypes(t *testing.T) {
	bodies := map[string]struct{ ctype, body string }{
		"/data.json":   {"application/json", `{"temp": 21.5, "tags": ["a", "<b>"]}`},
		"/problem":     {"application/problem+json", `{"title":"nope"}`},
		"/notes.txt":   {"text/plain; charset=utf-8", "line one\n  line two\n"},
		"/feed.xml":    {"application/rss+xml", "<rss><channel><title>t</title></channel></rss>"},
		"/sniffed":     {"", "<html><title>Sniffed</title><p>body</p></html>"},
		"/image.png":   {"image/png", "\x89PNG\r\n\x1a\n...."},
		"/doc.pdf":     {"application/pdf", "%PDF-1.7"},
		"/blob":        {"application/octet-stream", "\x00\x01\x02"},
		"/sniffed.bin": {"", "\x00\x01\x02\x03binary"},
	}
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		b := bodies[r.URL.Path]
		if b.ctype != "" {
			w.Header().Set("Content-Type", b.ctype)
		} else {
			w.Header()["Content-Type"] = nil // keep net/http from sniffing on our behalf
		}
		fmt.Fprint(w, b.body)
	})
	f := newFetch(t, WebFetchConfig{AllowPrivate: true})
	tests := []struct {
		path    string
		want    string // whole output
		wantErr string
	}{
		{path: "/data.json", want: "URL: " + s.URL + "/data.json\nContent-Type: application/json\n\n" + bodies["/data.json"].body},
		{path: "/problem", want: "URL: " + s.URL + "/problem\nContent-Type: application/problem+json\n\n{\"title\":\"nope\"}"},
		{path: "/notes.txt", want: "URL: " + s.URL + "/notes.txt\nContent-Type: text/plain\n\nline one\n  line two\n"},
		{path: "/feed.xml", want: "URL: " + s.URL + "/feed.xml\nContent-Type: application/rss+xml\n\n" + bodies["/feed.xml"].body},
		{path: "/sniffed", want: "URL: " + s.URL + "/sniffed\nTitle: Sniffed\n\nbody"},
		{path: "/image.png", wantErr: "web_fetch: " + s.URL + "/image.png is image/png, not text: only HTML, JSON, XML and plain text pages can be read"},
		{path: "/doc.pdf", wantErr: "is application/pdf, not text"},
		{path: "/blob", wantErr: "is application/octet-stream, not text"},
		{path: "/sniffed.bin", wantErr: "is application/octet-stream, not text"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, err := fetch(f, s.URL+tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestWebFetchSizeCap(t *testing.T) {
	long := strings.Repeat("0123456789", 1000) // 10,000 bytes
	accents := strings.Repeat("é", 600)        // 1,200 bytes, 2 per rune
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/long":
			fmt.Fprint(w, long)
		case "/exact":
			fmt.Fprint(w, long[:1000])
		case "/accents":
			fmt.Fprint(w, accents)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<title>Big</title><p>"+long+"</p><p>tail never read</p>")
		}
	})
	tests := []struct {
		path string
		max  int64
		want string
	}{
		{"/long", 1000, "Content-Type: text/plain\n\n" + long[:1000] + "\n[truncated at 1000 bytes]"},
		{"/exact", 1000, "Content-Type: text/plain\n\n" + long[:1000]},
		{"/accents", 1001, "Content-Type: text/plain\n\n" + strings.Repeat("é", 500) + "\n[truncated at 1001 bytes]"},
		{"/page", 500, "Title: Big\n\n" + long[:500-len("<title>Big</title><p>")] + "\n[truncated at 500 bytes]"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			f := newFetch(t, WebFetchConfig{AllowPrivate: true, MaxBytes: tc.max})
			got, err := fetch(f, s.URL+tc.path)
			if err != nil {
				t.Fatal(err)
			}
			want := "URL: " + s.URL + tc.path + "\n" + tc.want
			if got != want {
				t.Errorf("got\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestWebFetchDomainAllowlist(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello from "+r.Host)
	})
	res := newResolver(map[string]string{
		"example.test": "127.0.0.1", "docs.example.test": "127.0.0.1",
		"badexample.test": "127.0.0.1", "evil.test": "127.0.0.1",
	})
	f := newFetch(t, WebFetchConfig{AllowDomains: []string{"Example.TEST."}, AllowPrivate: true, Resolver: res})
	tests := []struct {
		host    string
		wantErr string
	}{
		{host: "example.test"},
		{host: "docs.example.test"},
		{host: "DOCS.Example.Test."},
		{host: "badexample.test", wantErr: "web_fetch: badexample.test is not in the allowed domains (example.test)"},
		{host: "evil.test", wantErr: "web_fetch: evil.test is not in the allowed domains (example.test)"},
		{host: "127.0.0.1", wantErr: "web_fetch: 127.0.0.1 is not in the allowed domains (example.test)"},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			got, err := fetch(f, s.at(tc.host, "/"))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("got %q, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(got, "hello from "+tc.host+":"+s.port) {
				t.Errorf("got %q", got)
			}
		})
	}
	if n := len(s.requests()); n != 3 {
		t.Errorf("server got %d requests, want 3 (refused hosts must not be contacted)", n)
	}
	if res.count("evil.test") != 0 || res.count("badexample.test") != 0 {
		t.Error("refused hosts were resolved; the allowlist must be checked first")
	}
}

func TestWebFetchLoopbackRefusedByDefault(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "internal secret")
	})
	res := newResolver(map[string]string{"localhost": "127.0.0.1", "mixed.test": "8.8.8.8,127.0.0.1", "v6.test": "::1"})
	f := newFetch(t, WebFetchConfig{Resolver: res})
	tests := []struct{ url, want string }{
		{s.URL + "/", "web_fetch: refusing 127.0.0.1: loopback addresses are not allowed"},
		{s.at("localhost", "/"), "web_fetch: refusing localhost (127.0.0.1): loopback addresses are not allowed"},
		{s.at("mixed.test", "/"), "web_fetch: refusing mixed.test (127.0.0.1): loopback addresses are not allowed"},
		{s.at("v6.test", "/"), "web_fetch: refusing v6.test (::1): loopback addresses are not allowed"},
	}
	for _, tc := range tests {
		got, err := fetch(f, tc.url)
		if err == nil || err.Error() != tc.want {
			t.Errorf("fetch(%s) = %q, %v; want error %q", tc.url, got, err, tc.want)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("server got %d requests", n)
	}

	allowed := newFetch(t, WebFetchConfig{AllowPrivate: true, Resolver: res})
	got, err := fetch(allowed, s.at("localhost", "/"))
	if err != nil || !strings.HasSuffix(got, "\n\ninternal secret") {
		t.Fatalf("with AllowPrivate: %q, %v", got, err)
	}
	nets := newFetch(t, WebFetchConfig{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if got, err := fetch(nets, s.URL+"/"); err != nil || !strings.HasSuffix(got, "internal secret") {
		t.Fatalf("with AllowNetworks 127.0.0.0/8: %q, %v", got, err)
	}
}

func TestWebFetchRefusesIPLiteralForms(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") })
	f := newFetch(t, WebFetchConfig{})
	tests := []struct{ url, want string }{
		{s.at("0x7f.1", "/"), "web_fetch: refusing 0x7f.1 (127.0.0.1): loopback addresses are not allowed"},
		{s.at("2130706433", "/"), "web_fetch: refusing 2130706433 (127.0.0.1): loopback addresses are not allowed"},
		{s.at("0177.0.0.1", "/"), "web_fetch: refusing 0177.0.0.1 (127.0.0.1): loopback addresses are not allowed"},
		{s.at("[::1]", "/"), "web_fetch: refusing ::1: loopback addresses are not allowed"},
		{s.at("[::ffff:127.0.0.1]", "/"), "web_fetch: refusing ::ffff:127.0.0.1 (127.0.0.1): loopback addresses are not allowed"},
		{"http://169.254.169.254/latest/meta-data/iam/", "web_fetch: refusing 169.254.169.254: link-local addresses are not allowed (this is the cloud metadata address)"},
		{"http://[fd00:ec2::254]/", "web_fetch: refusing fd00:ec2::254: link-local addresses are not allowed (this is the cloud metadata address)"},
		{"http://10.0.0.1/", "web_fetch: refusing 10.0.0.1: private addresses are not allowed"},
		{"http://100.64.1.1/", "web_fetch: refusing 100.64.1.1: carrier-grade NAT (100.64.0.0/10) addresses are not allowed"},
		{"http://[fe80::1%25eth0]/", "web_fetch: refusing fe80::1%eth0 (fe80::1): link-local addresses are not allowed"},
		{"http://0.0.0.0:" + s.port + "/", "web_fetch: refusing 0.0.0.0: unspecified addresses are not allowed"},
		{"http://0x8.0x8.0x8.0x8/", "web_fetch: refusing 0x8.0x8.0x8.0x8: numeric hosts must be written as dotted-decimal IPv4 (8.8.8.8) or IPv6"},
	}
	for _, tc := range tests {
		got, err := fetch(f, tc.url)
		if err == nil || err.Error() != tc.want {
			t.Errorf("fetch(%s) = %q, %v\nwant error %q", tc.url, got, err, tc.want)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("server got %d requests", n)
	}
}

func TestWebFetchRedirectToPrivateRefused(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "landed on "+r.URL.Path)
	})
	res := newResolver(map[string]string{"intranet.test": "10.0.0.7", "meta.test": "169.254.169.254"})
	// The origin (127.0.0.1) is allowed on purpose; everything else private is not.
	f := newFetch(t, WebFetchConfig{Resolver: res, AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	redirect := func(to string) string { return s.URL + "/r?to=" + url.QueryEscape(to) }

	got, err := fetch(f, redirect("/ok"))
	if err != nil || got != "URL: "+s.URL+"/ok\nContent-Type: text/plain\n\nlanded on /ok" {
		t.Fatalf("allowed redirect: %q, %v", got, err)
	}
	tests := []struct{ to, want string }{
		{"http://169.254.169.254/latest/meta-data/", "web_fetch: redirect to http://169.254.169.254/latest/meta-data/ refused: refusing 169.254.169.254: link-local addresses are not allowed (this is the cloud metadata address)"},
		{"http://meta.test/latest/", "web_fetch: redirect to http://meta.test/latest/ refused: refusing meta.test (169.254.169.254): link-local addresses are not allowed (this is the cloud metadata address)"},
		{"http://intranet.test/admin", "web_fetch: redirect to http://intranet.test/admin refused: refusing intranet.test (10.0.0.7): private addresses are not allowed"},
		{s.at("127.0.0.2", "/x"), "web_fetch: redirect to " + s.at("127.0.0.2", "/x") + " refused: refusing 127.0.0.2: loopback addresses are not allowed"},
		{s.at("[::1]", "/x"), "web_fetch: redirect to " + s.at("[::1]", "/x") + " refused: refusing ::1: loopback addresses are not allowed"},
		{s.at("0x7f.2", "/x"), "web_fetch: redirect to " + s.at("0x7f.2", "/x") + " refused: refusing 0x7f.2 (127.0.0.2): loopback addresses are not allowed"},
		{"file:///etc/passwd", "web_fetch: redirect to file:///etc/passwd refused: only http and https URLs can be fetched, not file: URLs"},
	}
	for _, tc := range tests {
		got, err := fetch(f, redirect(tc.to))
		if err == nil || err.Error() != tc.want {
			t.Errorf("redirect to %s: %q, %v\nwant error %q", tc.to, got, err, tc.want)
		}
	}
	for _, r := range s.requests() {
		if r.Path != "/ok" && !strings.HasPrefix(r.Path, "/r?") {
			t.Errorf("a refused redirect target was requested: %+v", r)
		}
	}
}

func TestWebFetchRedirectAllowlistAndLimit(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/hop/") {
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
			if n > 0 {
				http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusMovedPermanently)
				return
			}
		}
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "at "+r.Host+r.URL.Path)
	})
	res := newResolver(map[string]string{"example.test": "127.0.0.1", "docs.example.test": "127.0.0.1", "evil.test": "127.0.0.1"})
	f := newFetch(t, WebFetchConfig{AllowDomains: []string{"*.example.test"}, AllowPrivate: true, Resolver: res})

	got, err := fetch(f, s.at("example.test", "/r?to="+url.QueryEscape(s.at("docs.example.test", "/in"))))
	if err != nil || !strings.HasSuffix(got, "at docs.example.test:"+s.port+"/in") {
		t.Errorf("redirect to an allowed subdomain: %q, %v", got, err)
	}
	evil := s.at("evil.test", "/steal")
	_, err = fetch(f, s.at("example.test", "/r?to="+url.QueryEscape(evil)))
	if want := "web_fetch: redirect to " + evil + " refused: evil.test is not in the allowed domains (example.test)"; err == nil || err.Error() != want {
		t.Errorf("redirect off the allowlist: %v\nwant %q", err, want)
	}

	got, err = fetch(f, s.at("example.test", "/hop/5"))
	if err != nil || !strings.HasSuffix(got, "at example.test:"+s.port+"/hop/0") {
		t.Errorf("5 redirects must be followed: %q, %v", got, err)
	}
	_, err = fetch(f, s.at("example.test", "/hop/6"))
	if want := "web_fetch: redirect to " + s.at("example.test", "/hop/0") + " refused: more than 5 redirects"; err == nil || err.Error() != want {
		t.Errorf("6 redirects: %v\nwant %q", err, want)
	}
	for _, r := range s.requests() {
		if r.Path == "/steal" || r.Host == "evil.test:"+s.port {
			t.Errorf("refused target was contacted: %+v", r)
		}
	}
}

// The resolver says "public" when asked before the request and "loopback"
// when the connection is made: only the connect-time check can catch it.
func TestWebFetchDNSRebindingRefusedAtConnect(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached") })
	res := newResolver(map[string]string{"rebind.test": "93.184.216.34;127.0.0.1"})
	f := newFetch(t, WebFetchConfig{Resolver: res})
	got, err := fetch(f, s.at("rebind.test", "/"))
	if want := "web_fetch: refusing rebind.test (127.0.0.1): loopback addresses are not allowed"; err == nil || err.Error() != want {
		t.Fatalf("got %q, %v; want error %q", got, err, want)
	}
	if n := res.count("rebind.test"); n != 2 {
		t.Errorf("resolver asked %d times, want 2 (check, then connect)", n)
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("server got %d requests", n)
	}
}

func TestWebFetchControlChecksConnectAddress(t *testing.T) {
	f := newFetch(t, WebFetchConfig{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}})
	tests := []struct{ addr, want string }{
		{"127.0.0.1:80", "refusing 127.0.0.1: loopback addresses are not allowed"},
		{"[::1]:443", "refusing ::1: loopback addresses are not allowed"},
		{"[::ffff:169.254.169.254]:80", "refusing 169.254.169.254: link-local addresses are not allowed (this is the cloud metadata address)"},
		{"[fe80::1%lo]:80", "refusing fe80::1: link-local addresses are not allowed"},
		{"192.168.0.10:8080", "refusing 192.168.0.10: private addresses are not allowed"},
		{"not-an-address", "refusing not-an-address: not an IP address and port"},
		{"8.8.8.8:443", ""},
		{"[2606:4700:4700::1111]:443", ""},
		{"10.9.3.4:80", ""},
	}
	for _, tc := range tests {
		err := f.client.control("tcp", tc.addr, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("control(%s) = %v, want allowed", tc.addr, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("control(%s) = %v, want %q", tc.addr, err, tc.want)
		}
	}
}

func TestWebFetchOnlyGET(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/307":
			http.Redirect(w, r, "/308", http.StatusTemporaryRedirect)
		case "/308":
			http.Redirect(w, r, "/end", http.StatusPermanentRedirect)
		default:
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, r.Method)
		}
	})
	f := newFetch(t, WebFetchConfig{AllowPrivate: true})
	for _, args := range []string{
		`{"url":"` + s.URL + `/end","method":"POST"}`,
		`{"url":"` + s.URL + `/end","body":"x=1"}`,
		`{"url":"` + s.URL + `/end","headers":{"X-A":"b"}}`,
	} {
		got, err := f.Call(context.Background(), json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), "web_fetch: invalid arguments: json: unknown field") {
			t.Errorf("Call(%s) = %q, %v; want unknown field error", args, got, err)
		}
	}
	if n := len(s.requests()); n != 0 {
		t.Fatalf("server got %d requests from refused calls", n)
	}
	got, err := fetch(f, s.URL+"/307")
	if err != nil || !strings.HasSuffix(got, "\n\nGET") {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, r := range s.requests() {
		if r.Method != http.MethodGet {
			t.Errorf("server saw %s %s", r.Method, r.Path)
		}
	}
}

func TestWebFetchBadURLs(t *testing.T) {
	f := newFetch(t, WebFetchConfig{AllowPrivate: true})
	tests := []struct{ url, want string }{
		{"", "web_fetch: the url argument is empty"},
		{"file:///etc/passwd", "web_fetch: only http and https URLs can be fetched, not file: URLs"},
		{"ftp://example.com/x", "web_fetch: only http and https URLs can be fetched, not ftp: URLs"},
		{"gopher://127.0.0.1:70/", "web_fetch: only http and https URLs can be fetched, not gopher: URLs"},
		{"javascript:alert(1)", "web_fetch: only http and https URLs can be fetched, not javascript: URLs"},
		{"/relative/path", `web_fetch: "/relative/path" is not an absolute URL: give a full http:// or https:// URL`},
		{"http://", "web_fetch: the URL has no host"},
		{"http://user:hunter2@127.0.0.1/", "web_fetch: URLs with a user name or password are not allowed"},
		{"http://bücher.example/", `web_fetch: host "bücher.example" has characters that are not allowed: write internationalized domain names in punycode (xn--...)`},
		{"http://exa mple.com/", "web_fetch: invalid URL: parse"},
	}
	for _, tc := range tests {
		got, err := fetch(f, tc.url)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("fetch(%q) = %q, %v; want error %q", tc.url, got, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error reveals the password: %v", err)
		}
	}
}

func TestWebFetchHTTPErrorsAndTimeouts(t *testing.T) {
	release := make(chan struct{})
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		default:
			http.NotFound(w, r)
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close

	f := newFetch(t, WebFetchConfig{AllowPrivate: true, Timeout: 100 * time.Millisecond})
	_, err := fetch(f, s.URL+"/missing")
	if want := "web_fetch: GET " + s.URL + "/missing: the server answered 404 Not Found"; err == nil || err.Error() != want {
		t.Errorf("404: %v, want %q", err, want)
	}
	_, err = fetch(f, s.URL+"/slow")
	if want := "web_fetch: GET " + s.URL + "/slow: timed out after 100ms"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("timeout: %v, want prefix %q", err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.Call(ctx, json.RawMessage(`{"url":"`+s.URL+`/slow"}`))
	if want := "web_fetch: GET " + s.URL + "/slow: context canceled"; err == nil || err.Error() != want {
		t.Errorf("canceled: %v, want %q", err, want)
	}
}

func TestNewWebFetchConfig(t *testing.T) {
	for _, bad := range []string{"https://example.com", "example.com:443", "example.com/path", "", "*", "ex ample.com", "bücher.de"} {
		if _, err := NewWebFetch(WebFetchConfig{AllowDomains: []string{bad}}); err == nil {
			t.Errorf("AllowDomains %q accepted", bad)
		}
	}
	if _, err := NewWebFetch(WebFetchConfig{MaxBytes: -1}); err == nil {
		t.Error("negative MaxBytes accepted")
	}
	f, err := NewWebFetch(WebFetchConfig{AllowDomains: []string{"*.Example.com", ".docs.rs", "[::1]", "10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.allow, ","); got != "example.com,docs.rs,::1,10.0.0.1" {
		t.Errorf("normalized allowlist = %q", got)
	}
	if d := f.Description(); !strings.Contains(d, "Allowed domains (and their subdomains): example.com, docs.rs, ::1, 10.0.0.1.") || !strings.Contains(d, "1048576 bytes") {
		t.Errorf("description = %q", d)
	}
	if !f.Repeatable() || f.Name() != "web_fetch" {
		t.Error("web_fetch must be named web_fetch and be repeatable")
	}
}
