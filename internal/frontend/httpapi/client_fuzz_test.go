package httpapi

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// FuzzClientAddr: the client address (the sessions' rate-limit subject)
// from X-Forwarded-For and the connection. Whatever the header holds:
// no panic; the answer is "", an IPv4 address, or an IPv6 /64 prefix; only
// the header's last value counts (what a client prepends changes nothing,
// so it cannot pick another client's budget); and a last value that is an
// address is the answer.
func FuzzClientAddr(f *testing.F) {
	for _, s := range [][2]string{
		{"203.0.113.7", "10.0.0.1:1234"}, {"1.1.1.1, 203.0.113.7", "10.0.0.1:1234"}, {"", "10.0.0.1:1234"},
		{"2001:db8::1", "[::1]:80"}, {"garbage", "10.0.0.1:1"}, {" , ,", "nohost"}, {"::ffff:1.2.3.4", "[2001:db8:1:2:3:4:5:6]:9"},
		{"1.2.3.4,", "1.2.3.4"}, {"[2001:db8::1]:443", "[fe80::1%eth0]:80"}, {"999.1.1.1", ""},
	} {
		f.Add(s[0], s[1], "198.51.100.1")
	}
	s := &Server{cfg: Config{ClientIPHeader: "X-Forwarded-For"}}
	plain := &Server{}
	f.Fuzz(func(t *testing.T, header, remote, prefix string) {
		r := &http.Request{Header: http.Header{}, RemoteAddr: remote}
		if header != "" {
			r.Header.Set("X-Forwarded-For", header)
		}
		got := s.clientAddr(r)
		if got != "" {
			if v6, ok := strings.CutSuffix(got, "/64"); ok {
				ip := net.ParseIP(v6)
				if ip == nil || ip.To4() != nil || !ip.Equal(ip.Mask(net.CIDRMask(64, 128))) {
					t.Fatalf("%q, %q → %q: not an IPv6 /64", header, remote, got)
				}
			} else if ip := net.ParseIP(got); ip == nil || ip.To4() == nil || ip.String() != got {
				t.Fatalf("%q, %q → %q: not an IPv4 address", header, remote, got)
			}
		}
		if header != "" {
			last := header[strings.LastIndexByte(header, ',')+1:]
			if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil && got != keyOf(ip) {
				t.Fatalf("%q → %q, want the last value's %q", header, got, keyOf(ip))
			}
			// A client's own values before the proxy's change nothing,
			// in the same header line or in an earlier one.
			r2 := &http.Request{Header: http.Header{}, RemoteAddr: remote}
			r2.Header.Set("X-Forwarded-For", prefix+","+header)
			if g2 := s.clientAddr(r2); g2 != got {
				t.Fatalf("prepending %q changed %q → %q", prefix, got, g2)
			}
			r3 := &http.Request{Header: http.Header{}, RemoteAddr: remote}
			r3.Header.Add("X-Forwarded-For", prefix)
			r3.Header.Add("X-Forwarded-For", header)
			if g3 := s.clientAddr(r3); g3 != got {
				t.Fatalf("an earlier header line %q changed %q → %q", prefix, got, g3)
			}
		}
		// Without ClientIPHeader the header is never read.
		r4 := &http.Request{Header: http.Header{}, RemoteAddr: remote}
		r5 := &http.Request{Header: r.Header, RemoteAddr: remote}
		if plain.clientAddr(r4) != plain.clientAddr(r5) {
			t.Fatalf("without ClientIPHeader, X-Forwarded-For %q changed the address", header)
		}
	})
}
