package payout

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
)

// hmacHex is computed here independently of the package's signing code.
func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

const testSecret = "0123456789abcdef0123456789abcdef"

func TestRedirectURLSignature(t *testing.T) {
	cases := []struct {
		name, base, wantQuery string
		f                     Fields
	}{
		{"no query", "https://app.test/cb", "tid=T1&status=complete&reward=141",
			Fields{TID: "T1", Status: outcome.Complete, Reward: 141}},
		{"existing query kept byte for byte", "https://app.test/cb?uid=a%20b&x=1;y&empty=&Z=%7e",
			"uid=a%20b&x=1;y&empty=&Z=%7e&tid=T2&status=over_quota&reward=1",
			Fields{TID: "T2", Status: outcome.OverQuota, Reward: 1}},
		{"trailing question mark", "https://app.test/cb?", "tid=T3&status=quality_term&reward=0",
			Fields{TID: "T3", Status: outcome.QualityTerm}},
		{"trailing ampersand", "https://app.test/cb?a=1&", "a=1&tid=T4&status=disqualified&reward=2",
			Fields{TID: "T4", Status: outcome.Disqualified, Reward: 2}},
		{"values escaped", "http://127.0.0.1:9/x?k=v", "k=v&tid=a+b%26c%3D&status=reversed&reward=-3",
			Fields{TID: "a b&c=", Status: outcome.Reversed, Reward: -3}},
		{"not eligible: no tid", "https://app.test/cb?u=1", "u=1&status=over_quota&reward=0",
			Fields{Status: outcome.OverQuota}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pub := persistence.Publisher{RedirectURL: c.base, APISecret: testSecret}
			got := RedirectURL(pub, c.f)
			// wantQuery repeats the configured query: the expected URL is the part before it.
			want := c.base + "?"
			if i := strings.IndexByte(c.base, '?'); i >= 0 {
				want = c.base[:i+1]
			}
			want += c.wantQuery + "&sech=" + hmacHex(testSecret, c.wantQuery)
			if got != want {
				t.Fatalf("RedirectURL =\n %s\nwant\n %s", got, want)
			}
			u, err := url.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if !VerifySech(u.RawQuery, testSecret) {
				t.Fatal("VerifySech rejects the URL")
			}
			if VerifySech(u.RawQuery, testSecret+"x") {
				t.Fatal("VerifySech accepts another secret")
			}
			last := u.RawQuery[strings.LastIndexByte(u.RawQuery, '&')+1:]
			if !strings.HasPrefix(last, "sech=") {
				t.Fatalf("sech is not last: %s", u.RawQuery)
			}
		})
	}
}

func TestNotEligibleURL(t *testing.T) {
	pub := persistence.Publisher{RedirectURL: "https://app.test/back?src=sb", APISecret: testSecret}
	got := NotEligibleURL(pub)
	q := "src=sb&status=over_quota&reward=0"
	if want := "https://app.test/back?" + q + "&sech=" + hmacHex(testSecret, q); got != want {
		t.Fatalf("NotEligibleURL = %s, want %s", got, want)
	}
}

func TestFragmentStaysLast(t *testing.T) {
	pub := persistence.Publisher{RedirectURL: "https://app.test/cb?a=1#/done?x=y", APISecret: testSecret}
	got := RedirectURL(pub, Fields{TID: "T", Status: outcome.Complete, Reward: 5})
	q := "a=1&tid=T&status=complete&reward=5"
	if want := "https://app.test/cb?" + q + "&sech=" + hmacHex(testSecret, q) + "#/done?x=y"; got != want {
		t.Fatalf("RedirectURL = %s, want %s", got, want)
	}
}

func TestPostbackURL(t *testing.T) {
	pub := persistence.Publisher{RedirectURL: "https://app.test/cb", PostbackURL: "https://api.app.test/pb?key=K%2F1",
		APISecret: testSecret}
	got := PostbackURL(pub, Fields{TID: "abc123", Status: outcome.Complete, Reward: 141, PayoutUSD: 14100,
		UserIdentifier: "user+1@example.com"})
	q := "key=K%2F1&tid=abc123&status=complete&reward=141&payout_usd=1.4100&user_identifier=user%2B1%40example.com"
	if want := "https://api.app.test/pb?" + q + "&sech=" + hmacHex(testSecret, q); got != want {
		t.Fatalf("PostbackURL =\n %s\nwant\n %s", got, want)
	}
	u, _ := url.Parse(got)
	v := u.Query()
	if v.Get("user_identifier") != "user+1@example.com" || v.Get("payout_usd") != "1.4100" {
		t.Fatalf("decoded %v", v)
	}
	pub.PostbackURL = ""
	if got := PostbackURL(pub, Fields{TID: "x", Status: outcome.Complete}); got != "" {
		t.Fatalf("PostbackURL without a postback URL = %q", got)
	}
}

func TestVerifySechRejects(t *testing.T) {
	q := "tid=T&status=complete&reward=1"
	sig := hmacHex(testSecret, q)
	for name, raw := range map[string]string{
		"missing":         q,
		"empty":           "",
		"only sech":       "sech=" + sig,
		"upper-case hex":  q + "&sech=" + strings.ToUpper(sig),
		"short":           q + "&sech=" + sig[:63],
		"long":            q + "&sech=" + sig + "0",
		"not last":        q + "&sech=" + sig + "&x=1",
		"tampered value":  strings.Replace(q, "reward=1", "reward=9", 1) + "&sech=" + sig,
		"appended param":  q + "&reward=9&sech=" + sig,
		"non-hex":         q + "&sech=" + strings.Repeat("g", 64),
		"other signature": q + "&sech=" + hmacHex("other", q),
	} {
		if VerifySech(raw, testSecret) {
			t.Errorf("%s: VerifySech(%q) = true", name, raw)
		}
	}
	if !VerifySech(q+"&sech="+sig, testSecret) {
		t.Fatal("VerifySech rejects a good signature")
	}
}

// FuzzRedirectURL checks, for any configured URL, secret and fields, that the configured
// query is kept byte for byte, that the added fields decode back, that sech is last and
// verifies, and that any change to the signed part fails verification.
func FuzzRedirectURL(f *testing.F) {
	f.Add("https://app.test/cb", testSecret, "T1", "complete", int64(141), 0)
	f.Add("https://app.test/cb?uid=a%20b&x=1;y", "s", "", "over_quota", int64(0), 3)
	f.Add("https://app.test/cb?#frag", "", "a b&c=d", "reversed", int64(-5), 100)
	f.Add("http://h/p?a=1&sech=deadbeef&", "k", "tid", "disqualified", int64(1<<62), 7)
	f.Fuzz(func(t *testing.T, base, secret, tid, status string, reward int64, flip int) {
		pub := persistence.Publisher{RedirectURL: base, APISecret: secret}
		got := RedirectURL(pub, Fields{TID: tid, Status: status, Reward: reward})

		head, frag, hasFrag := strings.Cut(base, "#")
		if !strings.HasPrefix(got, head) {
			t.Fatalf("configured URL not kept: %q → %q", base, got)
		}
		if hasFrag {
			if !strings.HasSuffix(got, "#"+frag) {
				t.Fatalf("fragment not last: %q → %q", base, got)
			}
			got = strings.TrimSuffix(got, "#"+frag)
		}
		qStart := strings.IndexByte(head, '?')
		if qStart < 0 {
			qStart = len(head)
		}
		raw := got[qStart+1:]
		if !VerifySech(raw, secret) {
			t.Fatalf("VerifySech(%q) = false", raw)
		}
		added := got[len(head):]
		added = strings.TrimPrefix(strings.TrimPrefix(added, "?"), "&")
		parts := strings.Split(added, "&")
		var names, values []string
		for _, p := range parts {
			n, v, _ := strings.Cut(p, "=")
			dv, err := url.QueryUnescape(v)
			if err != nil {
				t.Fatalf("added value %q does not decode: %v", v, err)
			}
			names, values = append(names, n), append(values, dv)
		}
		wantNames := []string{"status", "reward", "sech"}
		wantValues := []string{status, strconv.FormatInt(reward, 10)}
		if tid != "" {
			wantNames = append([]string{"tid"}, wantNames...)
			wantValues = append([]string{tid}, wantValues...)
		}
		if strings.Join(names, ",") != strings.Join(wantNames, ",") {
			t.Fatalf("added parameters %v, want %v (%q)", names, wantNames, got)
		}
		for i, w := range wantValues {
			if values[i] != w {
				t.Fatalf("parameter %s = %q, want %q", names[i], values[i], w)
			}
		}
		// Change one byte of the signed part.
		signed := strings.LastIndex(raw, "&sech=")
		if signed > 0 {
			i := (flip%signed + signed) % signed
			b := []byte(raw)
			b[i] ^= 0x01
			if VerifySech(string(b), secret) {
				t.Fatalf("VerifySech accepts a change at %d: %q", i, b)
			}
		}
	})
}
