package entrytoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/engine/fault"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func sample() Claims {
	return Claims{Kind: KindOffer, PublisherID: 7, ParticipantID: 123456, CampaignID: 987654321,
		DeviceType: 1, Expires: 1_800_000_000, Nonce: 0xdeadbeefcafe, DeviceID: "AEBE52E7-03EE-455A-B3C4-E57283966239", UserID: "user-1"}
}

func TestRoundTrip(t *testing.T) {
	k := NewKey(testKey)
	c := sample()
	tok := k.Sign(c)
	if strings.ContainsAny(tok, "+/=?&") {
		t.Fatalf("token not URL-safe: %q", tok)
	}
	got, err := k.Verify(tok, c.Expires-1)
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Fatalf("got %+v, want %+v", got, c)
	}
	if g, err := Verify(testKey, Sign(testKey, c), c.Expires-1); err != nil || g != c {
		t.Fatalf("package funcs: %+v %v", g, err)
	}
}

func TestMACIsHMAC(t *testing.T) {
	for _, key := range [][]byte{testKey, []byte(strings.Repeat("k", 64)), []byte(strings.Repeat("long", 40))} {
		k := NewKey(key)
		payload := appendPayload(nil, &Claims{Kind: KindSupport, PublisherID: 1, DeviceID: "x"})
		m := hmac.New(sha256.New, key)
		m.Write(payload)
		want := m.Sum(nil)
		got := k.mac(payload)
		if !hmac.Equal(got[:], want) {
			t.Fatalf("key len %d: mac differs from crypto/hmac", len(key))
		}
	}
}

func wantForbidden(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil || fault.KindOf(err) != fault.KindForbidden {
		t.Fatalf("%s: got %v, want Forbidden", what, err)
	}
}

func TestTamperEachByte(t *testing.T) {
	k := NewKey(testKey)
	c := sample()
	tok := k.Sign(c)
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := range len(tok) {
		for _, r := range alphabet {
			if byte(r) == tok[i] {
				continue
			}
			bad := tok[:i] + string(r) + tok[i+1:]
			if _, err := k.Verify(bad, c.Expires-1); err == nil {
				t.Fatalf("tampered byte %d (%q→%q) verified", i, tok[i], r)
			}
		}
	}
	// Truncations and extensions.
	for i := range len(tok) {
		if _, err := k.Verify(tok[:i], c.Expires-1); err == nil {
			t.Fatalf("prefix of length %d verified", i)
		}
	}
	wantForbidden(t, func() error { _, err := k.Verify(tok+"A", c.Expires-1); return err }(), "extended")
}

func TestExpiryAndKey(t *testing.T) {
	k := NewKey(testKey)
	c := sample()
	tok := k.Sign(c)
	_, err := k.Verify(tok, c.Expires)
	wantForbidden(t, err, "expired at Expires")
	_, err = k.Verify(tok, c.Expires+100)
	wantForbidden(t, err, "expired")
	_, err = NewKey([]byte("another key, also 32 bytes long.")).Verify(tok, c.Expires-1)
	wantForbidden(t, err, "wrong key")
	_, err = k.Verify("", 0)
	wantForbidden(t, err, "missing")
	_, err = k.Verify(strings.Repeat("A", MaxTokenLen+1), 0)
	wantForbidden(t, err, "overlong")
}

func TestTruncatesLongStrings(t *testing.T) {
	k := NewKey(testKey)
	c := sample()
	c.DeviceID = strings.Repeat("d", 400)
	c.UserID = strings.Repeat("u", 300)
	tok := k.Sign(c)
	if len(tok) > MaxTokenLen {
		t.Fatalf("token of %d bytes exceeds MaxTokenLen %d", len(tok), MaxTokenLen)
	}
	got, err := k.Verify(tok, c.Expires-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.DeviceID) != MaxString || len(got.UserID) != MaxString {
		t.Fatalf("lengths %d %d", len(got.DeviceID), len(got.UserID))
	}
}

func TestAppendTokenAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	k := NewKey(testKey)
	c := sample()
	buf := make([]byte, 0, 4*MaxTokenLen)
	if n := testing.AllocsPerRun(100, func() { buf = k.AppendToken(buf[:0], c) }); n != 0 {
		t.Fatalf("AppendToken allocates %v times", n)
	}
}

func FuzzVerify(f *testing.F) {
	k := NewKey(testKey)
	c := sample()
	f.Add(k.Sign(c), c.Expires-1)
	c2 := Claims{Kind: KindProfile, PublisherID: 1, Expires: 100, UserID: "u"}
	f.Add(k.Sign(c2), int64(50))
	f.Add("", int64(0))
	f.Add(".", int64(0))
	f.Add("AAAA.AAAAAAAAAAAAAAAAAAAAAA", int64(0))
	f.Add(strings.Repeat("_", 200)+"."+strings.Repeat("-", 22), int64(0))
	f.Fuzz(func(t *testing.T, tok string, now int64) {
		got, err := k.Verify(tok, now)
		if err != nil {
			if fault.KindOf(err) != fault.KindForbidden {
				t.Fatalf("error of kind %v", fault.KindOf(err))
			}
			return
		}
		// Whatever verifies must be exactly what we would sign.
		if re := k.Sign(got); re != tok {
			t.Fatalf("verified token %q re-signs as %q", tok, re)
		}
		if got.Expires <= now {
			t.Fatal("expired token verified")
		}
	})
}

func BenchmarkSign(b *testing.B) {
	k := NewKey(testKey)
	c := sample()
	buf := make([]byte, 0, MaxTokenLen)
	b.ReportAllocs()
	for b.Loop() {
		buf = k.AppendToken(buf[:0], c)
	}
}

func BenchmarkVerify(b *testing.B) {
	k := NewKey(testKey)
	c := sample()
	tok := k.Sign(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(tok, c.Expires-1); err != nil {
			b.Fatal(err)
		}
	}
}
