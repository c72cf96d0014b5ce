package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestDialRefusesNonPublic: the policy never connects to a non-public address, whether
// named as such or by a host name resolving to it, and connects to anything when private
// addresses are allowed.
func TestDialRefusesNonPublic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var p Policy
	for _, addr := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:80", "10.1.2.3:80", "172.16.0.1:443",
		"192.168.1.1:80", "169.254.169.254:80", "100.64.0.1:80", "0.0.0.0:80", "[fe80::1]:80", "[fd00::1]:80",
		"[::ffff:127.0.0.1]:80", "224.0.0.1:80", "[64:ff9b::a00:1]:80", "[2002:7f00:1::]:80", "240.0.0.1:80"} {
		c, err := p.Dial(addr, time.Second)
		if c != nil {
			c.Close()
		}
		if !errors.Is(err, ErrNotPublic) {
			t.Errorf("dial %s: %v, want refused", addr, err)
		}
	}
	c, err := Policy{AllowPrivate: true}.Dial("127.0.0.1:"+port, time.Second)
	if err != nil {
		t.Fatalf("dial with private addresses allowed: %v", err)
	}
	c.Close()
	for _, ip := range []string{"8.8.8.8", "2001:4860:4860::8888", "100.128.0.1", "[64:ff9b::808:808]", "2002:808:808::1"} {
		if !Public(netip.MustParseAddr(strings.Trim(ip, "[]"))) {
			t.Errorf("%s refused", ip)
		}
	}
}

// TestRefuses: a host is refused when it is, or resolves only to, non-public addresses;
// one that does not resolve is not (its failure is retried).
func TestRefuses(t *testing.T) {
	ctx := context.Background()
	var p Policy
	for host, want := range map[string]bool{"127.0.0.1": true, "localhost": true, "::1": true, "10.0.0.1": true,
		"8.8.8.8": false, "no-such-host.invalid": false} {
		if got := p.Refuses(ctx, host); got != want {
			t.Errorf("Refuses(%s) = %v, want %v", host, got, want)
		}
	}
	if (Policy{AllowPrivate: true}).Refuses(ctx, "127.0.0.1") {
		t.Error("refused with private addresses allowed")
	}
}

// TestReasonNamesNoAddress: the reasons of real failures are short texts that never carry
// the address dialed.
func TestReasonNamesNoAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	c := &fasthttp.Client{DialTimeout: Policy{AllowPrivate: true}.Dial}
	_, _, errRefused := c.Get(nil, "http://"+refused+"/x")
	_, _, errPlain := (&fasthttp.Client{}).Get(nil, "http://"+refused+"/x")
	_, _, errPolicy := (&fasthttp.Client{DialTimeout: Policy{}.Dial}).Get(nil, "http://"+refused+"/x")
	_, errLookup := net.DefaultResolver.LookupHost(context.Background(), "no-such-host.invalid")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errRefused, "connection refused"},
		{errPlain, "connection refused"},
		{errPolicy, "non-public address refused"},
		{fmt.Errorf("wrapped: %w", fasthttp.ErrTimeout), "timeout"},
		{errLookup, "host not found"},
		{errors.New("dial tcp 10.0.0.7:5432: something new"), "request failed"},
	} {
		got := Reason(tc.err)
		if got != tc.want || strings.Contains(got, "127.0.0.1") {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
