package gateway

import (
	"net"

	"github.com/cloudwego/hertz/pkg/app"
)

// clientIPFunc returns how the server tells a request's client address:
// the TCP peer, or — when the peer is one of http.trusted_proxies — the
// address those proxies put in X-Forwarded-For / X-Real-IP.
func clientIPFunc(trusted []string) func(c *app.RequestContext) string {
	cidrs := trustedNets(trusted)
	if len(cidrs) == 0 {
		return peerIP
	}
	return app.ClientIPWithOption(app.ClientIPOptions{
		RemoteIPHeaders: []string{"X-Forwarded-For", "X-Real-IP"},
		TrustedCIDRs:    cidrs,
	})
}

// trustedNets parses http.trusted_proxies (CIDRs or bare addresses,
// already validated).
func trustedNets(list []string) []*net.IPNet {
	var cidrs []*net.IPNet
	for _, s := range list {
		if _, n, err := net.ParseCIDR(s); err == nil {
			cidrs = append(cidrs, n)
		} else if ip := net.ParseIP(s); ip != nil {
			bits := 128
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			cidrs = append(cidrs, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
		}
	}
	return cidrs
}

func containsIP(nets []*net.IPNet, ip net.IP) bool {
	if ip == nil {
		return false
	}
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// peerIP is the TCP peer's address without the port.
func peerIP(c *app.RequestContext) string { return peerHost(c.RemoteAddr()) }

// peerHost is a without its port: a as it is when it has none, "" for nil.
func peerHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
