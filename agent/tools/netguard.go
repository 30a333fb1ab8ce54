package tools

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// BlockedAddressError says that a host resolved to (or is) an address that
// web_fetch refuses to connect to.
type BlockedAddressError struct {
	// Host is the name as written in the URL (may equal Addr's text).
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Reason explains the refusal, e.g. "loopback addresses are not allowed".
	Reason string
}

// Error reads "refusing 127.0.0.1: loopback addresses are not allowed", or
// "refusing intranet.example (10.0.0.7): private addresses are not allowed"
// when the host is a name or a disguised numeric form.
func (e *BlockedAddressError) Error() string {
	addr := e.Addr.String()
	if e.Host == "" || e.Host == addr {
		return "refusing " + addr + ": " + e.Reason
	}
	return "refusing " + e.Host + " (" + addr + "): " + e.Reason
}

var (
	pfxThisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	pfxCGNAT       = netip.MustParsePrefix("100.64.0.0/10")
	pfxBenchmark   = netip.MustParsePrefix("198.18.0.0/15")
	pfxReserved4   = netip.MustParsePrefix("240.0.0.0/4")
	pfxIETF4       = netip.MustParsePrefix("192.0.0.0/24")
	pfxV4Compat    = netip.MustParsePrefix("::/96")
	pfxNAT64       = netip.MustParsePrefix("64:ff9b::/96")
	pfxNAT64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	pfx6to4        = netip.MustParsePrefix("2002::/16")
	pfxSiteLocal6  = netip.MustParsePrefix("fec0::/10")
	metadataV4     = netip.MustParseAddr("169.254.169.254")
	metadataV6     = netip.MustParseAddr("fd00:ec2::254")
)

// AddressRefusal returns why web_fetch refuses to connect to a, or "" if a is
// a public unicast address. It is the single classifier used both before a
// request and at connect time.
func AddressRefusal(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid addresses are not allowed"
	}
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	switch {
	case a == metadataV4 || a == metadataV6:
		return "link-local addresses are not allowed (this is the cloud metadata address)"
	case a.IsUnspecified():
		return "unspecified addresses are not allowed"
	case a.IsLoopback():
		return "loopback addresses are not allowed"
	case a.IsPrivate():
		return "private addresses are not allowed"
	case a.IsLinkLocalUnicast():
		return "link-local addresses are not allowed"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast addresses are not allowed"
	}
	if a.Is4() {
		switch {
		case pfxCGNAT.Contains(a):
			return "carrier-grade NAT (100.64.0.0/10) addresses are not allowed"
		case pfxThisNetwork.Contains(a):
			return "\"this network\" (0.0.0.0/8) addresses are not allowed"
		case pfxReserved4.Contains(a):
			return "reserved and broadcast addresses are not allowed"
		case pfxBenchmark.Contains(a), pfxIETF4.Contains(a):
			return "special-purpose addresses are not allowed"
		}
		return ""
	}
	// IPv6 forms that carry an IPv4 address: judge the IPv4 address.
	b := a.As16()
	var embedded netip.Addr
	switch {
	case pfxV4Compat.Contains(a):
		return "IPv4-compatible IPv6 addresses are not allowed"
	case pfxSiteLocal6.Contains(a):
		return "site-local addresses are not allowed"
	case pfxNAT64.Contains(a), pfxNAT64Local.Contains(a):
		embedded = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case pfx6to4.Contains(a):
		embedded = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	if embedded.IsValid() {
		if r := AddressRefusal(embedded); r != "" {
			return r + " (embedded in an IPv6 address)"
		}
	}
	return ""
}

// parseHostIP reads host (as url.URL.Hostname returns it, without brackets)
// as an IP address. canonical reports whether it was written in a standard
// form (dotted-decimal IPv4 or IPv6 text); legacy forms accepted by C
// resolvers (inet_aton: 1 to 4 parts, each decimal, 0-prefixed octal or
// 0x-prefixed hex, as in 0x7f.1 or 2130706433) give canonical false.
func parseHostIP(host string) (addr netip.Addr, canonical, ok bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true, true
	}
	a, ok := parseLegacyIPv4(host)
	return a, false, ok
}

func parseLegacyIPv4(s string) (netip.Addr, bool) {
	if s == "" || len(s) > 64 {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseLegacyPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i := 0; i < len(vals)-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		n |= vals[i] << (24 - 8*uint(i))
	}
	last := vals[len(vals)-1]
	if max := uint64(1)<<(8*uint(5-len(vals))) - 1; last > max {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

func parseLegacyPart(p string) (uint64, bool) {
	base := 10
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if p == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 32)
	if err != nil {
		return 0, false
	}
	return v, true
}

// normalizeHost lowercases a host name and drops one trailing dot. Names
// with characters outside ASCII letters, digits, '-', '.', '_' and ':' (IPv6)
// are refused; internationalized names must be given in punycode.
func normalizeHost(host string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" {
		return "", fmt.Errorf("the URL has no host")
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':' || c == '%' {
			continue
		}
		return "", fmt.Errorf("host %q has characters that are not allowed: write internationalized domain names in punycode (xn--...)", host)
	}
	return h, nil
}

// domainAllowed reports whether host equals an entry or is a subdomain of one.
// Entries are normalized (lowercase, no leading "*." or ".", no trailing dot).
func domainAllowed(host string, allow []string) bool {
	if len(allow) == 0 {
		return true
	}
	for _, d := range allow {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
