package entrytoken

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/internal/fault"
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
		payload := appendPayload(nil, 1, &Claims{Kind: KindSupport, PublisherID: 1, DeviceID: "x"})
		m := hmac.New(sha256.New, key)
		m.Write(payload)
		want := m.Sum(nil)
		got := k.ring.Load().cur.mac(payload)
		if !hmac.Equal(got[:], want) {
			t.Fatalf("key len %d: mac differs from crypto/hmac", len(key))
		}
	}
}

// TestCMACVectors checks the AES-CMAC of token tags against RFC 4493 §4 (AES-128).
func TestCMACVectors(t *testing.T) {
	key, _ := hex.DecodeString("2b7e151628aed2a6abf7158809cf4f3c")
	msg, _ := hex.DecodeString("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51" +
		"30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
	m, err := newCMAC(key)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(m.k1[:]) + hex.EncodeToString(m.k2[:]); got != "fbeed618357133667c85e08f7236a8de"+"f7ddac306ae266ccf90bc11ee46d513b" {
		t.Fatalf("subkeys %s", got)
	}
	for _, v := range []struct {
		n   int
		tag string
	}{
		{0, "bb1d6929e95937287fa37d129b756746"},
		{16, "070a16b46b4d4144f79bdd9dd04a287c"},
		{40, "dfa66747de9ae63030ca32611497c827"},
		{64, "51f0bebf7e3b9d92fc49741779363cfe"},
	} {
		var tag [16]byte
		m.sum(&tag, make([]byte, 16), msg[:v.n])
		if got := hex.EncodeToString(tag[:]); got != v.tag {
			t.Fatalf("len %d: cmac %s, want %s", v.n, got, v.tag)
		}
	}
}

// TestTagIsCMAC pins the token format: payload "." tag, the tag being AES-CMAC under the key
// derived from the service key with HMAC-SHA256, and the payload starting with version 4 and
// the key id (the first 4 bytes of HMAC-SHA256(key, 0xfd "entrytoken/key-id")) and ending
// with the campaign.
func TestTagIsCMAC(t *testing.T) {
	c := sample()
	tok := NewKey(testKey).Sign(c)
	pl, tg, ok := strings.Cut(tok, ".")
	if !ok {
		t.Fatal("no dot")
	}
	payload, err := base64.RawURLEncoding.DecodeString(pl)
	h := hmac.New(sha256.New, testKey)
	h.Write([]byte("\xfdentrytoken/key-id"))
	id := h.Sum(nil)[:4]
	campaign := binary.AppendUvarint(nil, uint64(c.CampaignID))
	if err != nil || payload[0] != 4 || !bytes.Equal(payload[2:6], id) || !bytes.HasSuffix(payload, campaign) ||
		!bytes.Equal(payload, appendPayload(nil, KeyID(testKey), &c)) {
		t.Fatalf("payload %x (%v)", payload, err)
	}
	h = hmac.New(sha256.New, testKey)
	h.Write([]byte("\xfeentrytoken/aes-cmac/v2"))
	m, err := newCMAC(h.Sum(nil)[:16])
	if err != nil {
		t.Fatal(err)
	}
	var want [16]byte
	m.sum(&want, make([]byte, 16), payload)
	if tg != base64.RawURLEncoding.EncodeToString(want[:]) {
		t.Fatalf("tag %s, want CMAC %x", tg, want)
	}
}

// signV2 makes a token of the format before the key id (version 2), as a process not yet
// upgraded issues it: written out here from that format, not with the package's encoder.
func signV2(t testing.TB, secret []byte, c Claims) string { return signOld(t, 2, secret, c) }

// signOld makes a token of version 2 or of version 3 (version 2 with the key id after the
// kind; both have the campaign after the participant), as processes of earlier releases
// issue them.
func signOld(t testing.TB, version byte, secret []byte, c Claims) string {
	t.Helper()
	b := []byte{version, c.Kind}
	if version == 3 {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte("\xfdentrytoken/key-id"))
		b = append(b, h.Sum(nil)[:4]...)
	}
	b = binary.AppendUvarint(b, uint64(c.PublisherID))
	b = binary.AppendUvarint(b, uint64(c.ParticipantID))
	b = binary.AppendUvarint(b, uint64(c.CampaignID))
	b = append(b, c.DeviceType)
	b = binary.AppendUvarint(b, uint64(c.Expires))
	b = binary.LittleEndian.AppendUint64(b, c.Nonce)
	b = append(b, byte(len(c.DeviceID)))
	b = append(b, c.DeviceID...)
	b = append(b, byte(len(c.UserID)))
	b = append(b, c.UserID...)
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("\xfeentrytoken/aes-cmac/v2"))
	m, err := newCMAC(h.Sum(nil)[:16])
	if err != nil {
		t.Fatal(err)
	}
	var tag [16]byte
	m.sum(&tag, make([]byte, 16), b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(tag[:])
}

// TestRejectsVersion1 checks that tokens of the first format (version 1, HMAC-SHA256 tag)
// no longer verify, and that a version 1 or unknown version payload under a valid CMAC is
// refused too.
func TestRejectsVersion1(t *testing.T) {
	k := NewKey(testKey)
	c := sample()
	payload := appendPayload(nil, k.ID(), &c)
	payload[0] = 1
	h := hmac.New(sha256.New, testKey)
	h.Write(payload)
	old := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:TagSize])
	_, err := k.Verify(old, c.Expires-1)
	wantForbidden(t, err, "version 1 token")
	for _, v := range []byte{0, 1, 5, 255} {
		payload[0] = v
		var tag [16]byte
		k.ring.Load().cur.tok.sum(&tag, make([]byte, 16), payload)
		old := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(tag[:])
		_, err = k.Verify(old, c.Expires-1)
		wantForbidden(t, err, "unknown version payload")
	}
}

// TestAcceptsEarlierVersions checks the rolling upgrade: a version 2 token (no key id) or 3
// (campaign after the participant), issued by a process not yet upgraded, verifies for its
// lifetime under the current key or a previous key not yet retired; a forged, expired or
// retired-key one is refused as a forged token is.
func TestAcceptsEarlierVersions(t *testing.T) {
	for _, v := range []byte{2, 3} {
		t.Run(fmt.Sprint("version ", v), func(t *testing.T) { testAcceptsVersion(t, v) })
	}
}

func testAcceptsVersion(t *testing.T, v byte) {
	c := sample()
	now := c.Expires - 100
	k := NewKey(testKey)
	k.SetKeys(testKey, Previous{Secret: oldKey, Until: now + 50}, Previous{Secret: olderKey, Until: now - 1})
	underCur, underPrev := signOld(t, v, testKey, c), signOld(t, v, oldKey, c)
	pl, tg, _ := strings.Cut(underCur, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(pl)
	payload[len(payload)-1] ^= 1 // a different user id under the same tag
	forgedPayload := base64.RawURLEncoding.EncodeToString(payload) + "." + tg
	tagBytes, _ := base64.RawURLEncoding.DecodeString(tg)
	tagBytes[0] ^= 1
	forgedTag := pl + "." + base64.RawURLEncoding.EncodeToString(tagBytes)
	for _, tc := range []struct {
		name  string
		token string
		now   int64
		ok    bool
	}{
		{"under current key", underCur, now, true},
		{"under previous key", underPrev, now, true},
		{"under current key until expiry", underCur, c.Expires - 1, true},
		{"expired", underCur, c.Expires, false},
		{"previous key retired", underPrev, now + 50, false},
		{"older key retired", signOld(t, v, olderKey, c), now, false},
		{"unknown key", signOld(t, v, []byte("a key this ring has never held.."), c), now, false},
		{"payload forged", forgedPayload, now, false},
		{"tag forged", forgedTag, now, false},
	} {
		got, err := k.Verify(tc.token, tc.now)
		if tc.ok && (err != nil || got != c) {
			t.Errorf("%s: %+v %v", tc.name, got, err)
		}
		if !tc.ok {
			wantForbidden(t, err, tc.name)
		}
	}
	// Only version 4 is issued.
	if tok := k.Sign(c); tok == underCur || !strings.HasPrefix(tok, "BA") {
		t.Fatalf("issued %q", tok)
	}
}

var (
	oldKey   = []byte("the key before rotation, 32 byte")
	olderKey = []byte("the key two rotations ago, 32 by")
)

// TestRotation checks the keyring: after SetKeys a token signed under the previous key still
// verifies until that key's retirement, then is refused; new tokens carry the new key id; a
// token naming a key the ring does not hold (an older one, or one never seen) is refused
// with the answer a forged token gets.
func TestRotation(t *testing.T) {
	c := sample()
	now := c.Expires - 100
	k := NewKey(oldKey)
	before := k.Sign(c)
	older := NewKey(olderKey).Sign(c)
	k.SetKeys(testKey, Previous{Secret: oldKey, Until: now + 50}, Previous{Secret: olderKey, Until: now - 1})
	if k.ID() != KeyID(testKey) || k.ID() == KeyID(oldKey) {
		t.Fatalf("current id %x", k.ID())
	}
	after := k.Sign(c)
	if after == before {
		t.Fatal("same token after rotation")
	}
	for _, tc := range []struct {
		name  string
		token string
		now   int64
		ok    bool
	}{
		{"issued before rotation", before, now, true},
		{"issued after rotation", after, now, true},
		{"previous key retired", before, now + 50, false},
		{"current key never retires", after, now + 50, true},
		{"older key retired", older, now, false},
		{"unknown key", NewKey([]byte("a key this ring has never held..")).Sign(c), now, false},
	} {
		got, err := k.Verify(tc.token, tc.now)
		if tc.ok && (err != nil || got != c) {
			t.Errorf("%s: %+v %v", tc.name, got, err)
		}
		if !tc.ok {
			if err == nil || fault.KindOf(err) != fault.KindForbidden || err.Error() != "invalid token" {
				t.Errorf("%s: got %v, want the refusal of a forged token", tc.name, err)
			}
		}
	}
	// The same token with its key id changed to the current key's is a forgery.
	pl, tg, _ := strings.Cut(before, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(pl)
	binary.BigEndian.PutUint32(payload[2:6], k.ID())
	if _, err := k.Verify(base64.RawURLEncoding.EncodeToString(payload)+"."+tg, now); err == nil {
		t.Fatal("token with its key id swapped verified")
	}
	// SetKeys keeps prepared keys: the rotation back does not change verification.
	k.SetKeys(testKey)
	if _, err := k.Verify(before, now); err == nil {
		t.Fatal("dropped previous key still verifies")
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
	// Verifying under a rotated ring allocates no more than under a single key: the claims'
	// two strings and the CMAC's working block.
	tok := NewKey(oldKey).Sign(c)
	k.SetKeys(testKey, Previous{Secret: oldKey, Until: c.Expires + 1})
	if n := testing.AllocsPerRun(100, func() {
		if _, err := k.Verify(tok, c.Expires-1); err != nil {
			t.Fatal(err)
		}
	}); n > 3 {
		t.Fatalf("Verify allocates %v times", n)
	}
	// A version 2 token, tried under each key of the ring, allocates no more either.
	v2 := signV2(t, oldKey, c)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := k.Verify(v2, c.Expires-1); err != nil {
			t.Fatal(err)
		}
	}); n > 3 {
		t.Fatalf("Verify of a version 2 token allocates %v times", n)
	}
}

func FuzzVerify(f *testing.F) {
	c := sample()
	prev := NewKey(oldKey)
	f.Add(prev.Sign(c), c.Expires-1)
	f.Add(NewKey(olderKey).Sign(c), c.Expires-1)
	k := NewKey(testKey)
	k.SetKeys(testKey, Previous{Secret: oldKey, Until: c.Expires})
	f.Add(k.Sign(c), c.Expires-1)
	c2 := Claims{Kind: KindProfile, PublisherID: 1, Expires: 100, UserID: "u"}
	f.Add(k.Sign(c2), int64(50))
	f.Add(signV2(f, testKey, c), c.Expires-1)
	f.Add(signV2(f, oldKey, c2), int64(50))
	f.Add(signV2(f, olderKey, c), c.Expires-1)
	f.Add(signOld(f, 3, testKey, c), c.Expires-1)
	f.Add(signOld(f, 3, oldKey, c2), int64(50))
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
		// Whatever verifies must be exactly what we would sign with the key it names, or
		// (versions 2 and 3) what the old format signs under a key of the ring.
		if v := map[string]byte{"Ag": 2, "Aw": 3}[tok[:2]]; v != 0 {
			switch tok {
			case signOld(t, v, testKey, got):
			case signOld(t, v, oldKey, got):
				if now >= c.Expires {
					t.Fatalf("version %d token of a retired key verified", v)
				}
			default:
				t.Fatalf("verified version %d token %q is no key's", v, tok)
			}
		} else {
			signer := k
			if !strings.HasPrefix(tok, k.Sign(got)[:8]) {
				signer = prev
				if now >= c.Expires {
					t.Fatal("token of a retired key verified")
				}
			}
			if re := signer.Sign(got); re != tok {
				t.Fatalf("verified token %q re-signs as %q", tok, re)
			}
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
	// A rotated ring: the token's key is found after the current one.
	k.SetKeys([]byte("the key after rotation, 32 bytes"), Previous{Secret: testKey, Until: c.Expires})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(tok, c.Expires-1); err != nil {
			b.Fatal(err)
		}
	}
}
