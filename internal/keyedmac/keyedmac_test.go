package keyedmac_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"sync"
	"testing"

	"github.com/switchboard/switchboard/internal/keyedmac"
)

// want is crypto/hmac's answer.
func want(h func() hash.Hash, secret, msg string) string {
	m := hmac.New(h, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// TestFuncAgreesWithHMAC: every way of asking gives crypto/hmac's HMAC, for several
// secrets used in turn (a state reset after each use, never another secret's), empty ones
// and one longer than the hash's block (hashed first, as HMAC does).
func TestFuncAgreesWithHMAC(t *testing.T) {
	long := string(make([]byte, 200))
	for name, h := range map[string]func() hash.Hash{"sha1": sha1.New, "sha256": sha256.New} {
		f := keyedmac.New(h)
		for round := range 3 {
			for _, secret := range []string{"s3cret", "", "other", long} {
				for _, parts := range [][]string{{}, {"a"}, {"https://x.test", "/cb?a=1&", "b=" + strconv.Itoa(round)}} {
					msg := ""
					for _, p := range parts {
						msg += p
					}
					w := want(h, secret, msg)
					if got := f.Hex(secret, parts...); got != w {
						t.Fatalf("%s Hex(%q, %q) = %s, want %s", name, secret, parts, got, w)
					}
					if got := string(f.AppendHex([]byte("x:"), secret, parts...)); got != "x:"+w {
						t.Fatalf("%s AppendHex = %s", name, got)
					}
					if got := hex.EncodeToString(f.Sum(nil, secret, parts...)); got != w {
						t.Fatalf("%s Sum = %s, want %s", name, got, w)
					}
					if !f.EqualHex(w, secret, parts...) {
						t.Fatalf("%s EqualHex refused the right signature", name)
					}
					if f.EqualHex(w[:len(w)-1]+"0", secret, parts...) && w[len(w)-1] != '0' {
						t.Fatalf("%s EqualHex took a wrong signature", name)
					}
					if f.EqualHex(w[:len(w)-2], secret, parts...) || f.EqualHex(w+"00", secret, parts...) {
						t.Fatalf("%s EqualHex took a signature of another length", name)
					}
				}
			}
		}
	}
}

// TestFuncForgetsPastMaxKeys: past MaxKeys secrets the states start over and still agree.
func TestFuncForgetsPastMaxKeys(t *testing.T) {
	f := keyedmac.New(sha256.New)
	for i := range keyedmac.MaxKeys + 10 {
		s := "secret-" + strconv.Itoa(i)
		if got := f.Hex(s, "m"); got != want(sha256.New, s, "m") {
			t.Fatalf("secret %d: %s", i, got)
		}
	}
	if got := f.Hex("secret-1", "m"); got != want(sha256.New, "secret-1", "m") {
		t.Fatalf("a forgotten secret keyed again: %s", got)
	}
}

// TestFuncConcurrent: goroutines signing under shared secrets at once get their own states.
func TestFuncConcurrent(t *testing.T) {
	f := keyedmac.New(sha1.New)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				s, m := "k"+strconv.Itoa(i%3), strconv.Itoa(g*1000+i)
				if got := f.Hex(s, m); got != want(sha1.New, s, m) {
					t.Errorf("goroutine %d: %s", g, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestFuncAllocs: once a secret's state exists, an HMAC into a buffer allocates nothing.
func TestFuncAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	f := keyedmac.New(sha256.New)
	dst := make([]byte, 0, 64)
	sig := f.Hex("s", "warm")
	f.AppendHex(dst, "s", "warm")
	if n := testing.AllocsPerRun(200, func() { dst = f.AppendHex(dst[:0], "s", "https://x.test/cb?", "a=1") }); n != 0 {
		t.Errorf("AppendHex: %v allocations", n)
	}
	if n := testing.AllocsPerRun(200, func() { f.EqualHex(sig, "s", "warm") }); n != 0 {
		t.Errorf("EqualHex: %v allocations", n)
	}
}
