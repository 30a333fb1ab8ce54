package tools

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// TestAddressClassifier feeds host names written every way an attacker might
// (as url.URL.Hostname returns them) through the same parse + classify path
// that web_fetch uses.
func TestAddressClassifier(t *testing.T) {
	tests := []struct {
		host      string
		addr      string // the address the host denotes
		canonical bool
		want      string // substring of the refusal; "" = allowed (public)
	}{
		{"127.0.0.1", "127.0.0.1", true, "loopback"},
		{"127.255.255.254", "127.255.255.254", true, "loopback"},
		{"0x7f.1", "127.0.0.1", false, "loopback"},
		{"0x7F.0.0.1", "127.0.0.1", false, "loopback"},
		{"0177.0.0.1", "127.0.0.1", false, "loopback"},
		{"2130706433", "127.0.0.1", false, "loopback"},
		{"0x7f000001", "127.0.0.1", false, "loopback"},
		{"127.1", "127.0.0.1", false, "loopback"},
		{"::1", "::1", true, "loopback"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1", true, "loopback"},
		{"::ffff:7f00:1", "::ffff:127.0.0.1", true, "loopback"},
		{"0:0:0:0:0:ffff:7f00:0001", "::ffff:127.0.0.1", true, "loopback"},
		{"169.254.169.254", "169.254.169.254", true, "cloud metadata"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254", false, "cloud metadata"},
		{"2852039166", "169.254.169.254", false, "cloud metadata"},
		{"::ffff:169.254.169.254", "::ffff:169.254.169.254", true, "cloud metadata"},
		{"fd00:ec2::254", "fd00:ec2::254", true, "cloud metadata"},
		{"169.254.1.1", "169.254.1.1", true, "link-local"},
		{"fe80::1", "fe80::1", true, "link-local"},
		{"fe80::1%eth0", "fe80::1%eth0", true, "link-local"},
		{"10.0.0.1", "10.0.0.1", true, "private"},
		{"012.0.0.1", "10.0.0.1", false, "private"},
		{"172.16.0.1", "172.16.0.1", true, "private"},
		{"172.31.255.255", "172.31.255.255", true, "private"},
		{"192.168.1.20", "192.168.1.20", true, "private"},
		{"fc00::1", "fc00::1", true, "private"},
		{"fd12:3456::1", "fd12:3456::1", true, "private"},
		{"fec0::1", "fec0::1", true, "site-local"},
		{"0.0.0.0", "0.0.0.0", true, "unspecified"},
		{"0", "0.0.0.0", false, "unspecified"},
		{"::", "::", true, "unspecified"},
		{"0.1.2.3", "0.1.2.3", true, "this network"},
		{"224.0.0.1", "224.0.0.1", true, "multicast"},
		{"239.255.255.250", "239.255.255.250", true, "multicast"},
		{"ff02::1", "ff02::1", true, "multicast"},
		{"100.64.0.1", "100.64.0.1", true, "carrier-grade NAT"},
		{"100.127.255.254", "100.127.255.254", true, "carrier-grade NAT"},
		{"255.255.255.255", "255.255.255.255", true, "broadcast"},
		{"240.0.0.1", "240.0.0.1", true, "reserved"},
		{"198.18.0.1", "198.18.0.1", true, "special-purpose"},
		{"::127.0.0.1", "::7f00:1", true, "IPv4-compatible"},
		{"64:ff9b::7f00:1", "64:ff9b::7f00:1", true, "loopback addresses are not allowed (embedded"},
		{"64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe", true, "cloud metadata"},
		{"2002:7f00:1::", "2002:7f00:1::", true, "loopback addresses are not allowed (embedded"},
		{"2002:c0a8:101::1", "2002:c0a8:101::1", true, "private"},
		// public
		{"8.8.8.8", "8.8.8.8", true, ""},
		{"1.1.1.1", "1.1.1.1", true, ""},
		{"172.32.0.1", "172.32.0.1", true, ""},
		{"100.128.0.1", "100.128.0.1", true, ""},
		{"100.63.255.255", "100.63.255.255", true, ""},
		{"169.255.0.1", "169.255.0.1", true, ""},
		{"2606:4700:4700::1111", "2606:4700:4700::1111", true, ""},
		{"::ffff:8.8.8.8", "::ffff:8.8.8.8", true, ""},
		{"64:ff9b::808:808", "64:ff9b::808:808", true, ""},
		{"0x8.0x8.0x8.0x8", "8.8.8.8", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			addr, canonical, ok := parseHostIP(tc.host)
			if !ok {
				t.Fatalf("parseHostIP(%q) did not read an address", tc.host)
			}
			if addr.String() != tc.addr || canonical != tc.canonical {
				t.Fatalf("parseHostIP(%q) = %v canonical=%v, want %s canonical=%v", tc.host, addr, canonical, tc.addr, tc.canonical)
			}
			got := AddressRefusal(addr)
			if tc.want == "" && got != "" {
				t.Fatalf("AddressRefusal(%s) = %q, want public", addr, got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("AddressRefusal(%s) = %q, want it to mention %q", addr, got, tc.want)
			}
		})
	}
}

func TestURLHostForms(t *testing.T) {
	// The bracketed and numeric forms as they arrive inside a URL.
	for raw, want := range map[string]string{
		"http://[::1]:8080/":             "::1",
		"http://[::ffff:127.0.0.1]/":     "::ffff:127.0.0.1",
		"http://0x7f.1/":                 "127.0.0.1",
		"http://169.254.169.254/latest/": "169.254.169.254",
		"http://[fe80::1%25eth0]/":       "fe80::1%eth0",
		"https://2130706433:443/x?y=z#f": "127.0.0.1",
		"http://0177.0000.0000.0001:80/": "127.0.0.1",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", raw, err)
		}
		a, _, ok := parseHostIP(u.Hostname())
		if !ok || a.String() != want {
			t.Errorf("%s: host %q read as %v ok=%v, want %s", raw, u.Hostname(), a, ok, want)
		}
		if AddressRefusal(a) == "" {
			t.Errorf("%s: %v classified as public", raw, a)
		}
	}
}

func TestParseHostIPRejectsNames(t *testing.T) {
	for _, h := range []string{"example.com", "1.2.3.4.5", "0x", "09.1.1.1", "256.1.1.1", "1.2.3.0x100", "1.16777216",
		"99999999999", "0x1g", "", "1..2", "localhost", "127.0.0.1.nip.io"} {
		if a, _, ok := parseHostIP(h); ok {
			t.Errorf("parseHostIP(%q) = %v, want not an address", h, a)
		}
	}
}

func TestDomainAllowed(t *testing.T) {
	allow := []string{"example.com", "docs.rs"}
	tests := []struct {
		host string
		want bool
	}{
		{"example.com", true},
		{"www.example.com", true},
		{"a.b.example.com", true},
		{"badexample.com", false},
		{"example.com.evil.net", false},
		{"docs.rs", true},
		{"rs", false},
		{"evil.net", false},
	}
	for _, tc := range tests {
		if got := domainAllowed(tc.host, allow); got != tc.want {
			t.Errorf("domainAllowed(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	if !domainAllowed("anything.net", nil) {
		t.Error("an empty allowlist must allow any host")
	}
}

func TestBlockedAddressErrorText(t *testing.T) {
	a := netip.MustParseAddr("127.0.0.1")
	if got := (&BlockedAddressError{Host: "127.0.0.1", Addr: a, Reason: "loopback addresses are not allowed"}).Error(); got != "refusing 127.0.0.1: loopback addresses are not allowed" {
		t.Errorf("got %q", got)
	}
	if got := (&BlockedAddressError{Host: "localhost", Addr: a, Reason: "loopback addresses are not allowed"}).Error(); got != "refusing localhost (127.0.0.1): loopback addresses are not allowed" {
		t.Errorf("got %q", got)
	}
}
