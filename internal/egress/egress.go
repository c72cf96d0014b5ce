// Package egress is the policy of the calls the server makes to addresses that partners and
// buyers choose: partner postbacks and the redirects they answer with, buyer webhooks, and
// the test sends of both. Such a call connects only to addresses of the public internet,
// checked on each address as it is dialed (after resolution, so no second look-up can answer
// differently), and what partners and buyers are told of a failed call is a short reason
// from a closed vocabulary that never names an address: neither can use the server to map
// the network it runs in (docs/payouts.md, "Outbound calls").
package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrNotPublic is the failure of a connection the policy refused: the address dialed is
// loopback, private, link-local, shared (CGNAT), unspecified, multicast or reserved.
var ErrNotPublic = errors.New("egress: non-public address refused")

// Policy decides which addresses outbound calls may connect to. The zero value refuses every
// non-public address.
type Policy struct {
	// AllowPrivate lets calls connect to non-public addresses too: tests, and one-host
	// setups whose partners and buyers run beside the server.
	AllowPrivate bool
}

// Dial connects to addr ("host:port") within timeout. Unless AllowPrivate, the dialer
// resolves the host and checks every address just before connecting to it: a non-public one
// is refused (ErrNotPublic) and the next is tried, so a host is reached only at a public
// address. Its signature is fasthttp.DialFuncWithTimeout.
func (p Policy) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if !p.AllowPrivate {
		d.Control = refuseNonPublic
	}
	return d.Dial("tcp", addr)
}

// refuseNonPublic is the dialer's check of each address it is about to connect to.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !Public(ap.Addr()) {
		return ErrNotPublic
	}
	return nil
}

// Refuses reports whether every connection to host would be refused: host is a non-public
// address, or resolves (within ctx) to addresses none of which is public. A host that does
// not resolve is not refused here: a call to it fails now and may succeed once its name
// does, so it is a failure to retry, not a refusal.
func (p Policy) Refuses(ctx context.Context, host string) bool {
	if p.AllowPrivate {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return !Public(a)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if Public(a) {
			return false
		}
	}
	return true
}

// Public reports whether a is a unicast address of the public internet. An IPv4 address
// carried in IPv6 (mapped, NAT64, 6to4) is judged as that IPv4 address.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() {
		if v4, ok := embeddedV4(a); ok {
			a = v4
		}
	}
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// reserved are the ranges IsGlobalUnicast admits that no public server holds.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT, RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// embeddedV4 is the IPv4 address a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address leads to.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)
