package httpapi

import (
	"net"
	"net/http"
	"strings"
)

// clientAddr is the caller's address: the last value of ClientIPHeader
// when configured and present, else the connection's remote host.
func (s *Server) clientAddr(r *http.Request) string {
	if h := s.cfg.ClientIPHeader; h != "" {
		if vs := r.Header.Values(h); len(vs) > 0 {
			last := vs[len(vs)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil {
				return keyOf(ip)
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil {
		return keyOf(ip)
	}
	return ""
}

// keyOf is an address as a rate-limit subject: IPv4 whole, IPv6 by its
// /64 (one host usually holds a whole /64).
func keyOf(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
