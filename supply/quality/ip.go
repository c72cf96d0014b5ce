package quality

import (
	"net/netip"

	"github.com/switchboard/switchboard/internal/fault"
)

var (
	errPrivateIP = fault.BadRequest("user_ip must be a public IP address (private, loopback, link-local, multicast, " +
		"reserved and unspecified addresses are refused)")
	// reservedAlways are refused even with AllowPrivateIPs.
	reservedAlways = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("240.0.0.0/4"), // reserved, and 255.255.255.255
		netip.MustParsePrefix("100::/64"),    // discard-only
	}
	// reservedUnlessAllowed are not globally reachable: refused unless AllowPrivateIPs.
	reservedUnlessAllowed = []netip.Prefix{
		netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT)
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("3fff::/20"),       // documentation
		netip.MustParsePrefix("2001:2::/48"),     // benchmarking
		netip.MustParsePrefix("5f00::/16"),       // segment routing
	}
)

// publicIP reports whether ip may be a participant's address: a public unicast address, or
// with allowPrivate also a private, loopback, link-local, shared or documentation one.
func publicIP(ip netip.Addr, allowPrivate bool) bool {
	if ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return publicIPv4(ip.As4(), allowPrivate)
	}
	return publicByRules(ip, allowPrivate)
}

// publicByRules is publicIP by the address ranges' rules, for any address: IPv6's answer,
// and the reference that publicIPv4's first-octet answer is tested against.
func publicByRules(ip netip.Addr, allowPrivate bool) bool {
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() {
		return false
	}
	for _, p := range reservedAlways {
		if p.Contains(ip) {
			return false
		}
	}
	if allowPrivate {
		return true
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range reservedUnlessAllowed {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// publicIPv4 is publicIP for IPv4, by first octet (the hot path's common case).
func publicIPv4(a [4]byte, allowPrivate bool) bool {
	switch {
	case a[0] == 0 || a[0] >= 224: // "this network", multicast, reserved, broadcast
		return false
	case allowPrivate:
		return true
	case a[0] == 10 || a[0] == 127: // private, loopback
		return false
	case a[0] == 100:
		return a[1]&0xc0 != 64 // 100.64.0.0/10 shared
	case a[0] == 169:
		return a[1] != 254 // link-local
	case a[0] == 172:
		return a[1]&0xf0 != 16 // 172.16.0.0/12 private
	case a[0] == 192:
		return !(a[1] == 168 || a[1] == 0 && (a[2] == 0 || a[2] == 2)) // private, IETF, documentation
	case a[0] == 198:
		return !(a[1]&0xfe == 18 || a[1] == 51 && a[2] == 100) // benchmarking, documentation
	case a[0] == 203:
		return !(a[1] == 0 && a[2] == 113) // documentation
	}
	return true
}

// CheckIP validates a parsed user_ip.
func (q *Service) CheckIP(ip netip.Addr) error {
	if q == nil || publicIP(ip, q.cfg.AllowPrivateIPs) {
		return nil
	}
	return errPrivateIP
}

// GeoIPStatus is the /readyz entry of the IP-country check: "ok" with a database, else "off".
func (q *Service) GeoIPStatus() string {
	if q == nil || q.geo == nil {
		return "off"
	}
	return "ok"
}
