package supplierlink

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"testing"

	"github.com/switchboard/switchboard/engine"
)

// hmacSHA1 is computed here independently of the code under test.
func hmacSHA1(key, msg string) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestBuild(t *testing.T) {
	const secret = "s3cret"
	answers := []engine.Answer{
		{QuestionID: engine.QuestionAge, Codes: []int32{34}},
		{QuestionID: engine.QuestionGender, Codes: []int32{2}},
		{QuestionID: engine.QuestionZip, Text: "SW1A1AA"},
		{QuestionID: 61, Codes: []int32{3, 5}},
		{QuestionID: 70, Text: "A&B C"},
	}
	v := Values{TID: "abc123", RespondentID: "R1X", RetargetID: "rt 1", Answers: answers}
	cases := []struct {
		name, link, want string
	}{
		{"id placeholder", "https://x.test/s?tid={ID}", "https://x.test/s?tid=abc123"},
		{"query ends in id=", "https://x.test/s/1?id=", "https://x.test/s/1?id=abc123"},
		{"query ends in &id=", "https://x.test/s/1?a=1&id=", "https://x.test/s/1?a=1&id=abc123"},
		{"no query", "https://x.test/s/1", "https://x.test/s/1?id=abc123"},
		{"other query", "https://x.test/s/1?a=1", "https://x.test/s/1?a=1&id=abc123"},
		{"uid= is not id=", "https://x.test/s/1?uid=", "https://x.test/s/1?uid=&id=abc123"},
		{"trailing ?", "https://x.test/s/1?", "https://x.test/s/1?id=abc123"},
		{"respondent", "https://x.test/s?t={ID}&r={RESPONDENT_ID}", "https://x.test/s?t=abc123&r=R1X"},
		{"retarget encoded", "https://x.test/s?t={ID}&rt={RETARGET_IDENTIFIER}", "https://x.test/s?t=abc123&rt=rt+1"},
		{"demographics", "https://x.test/s?t={ID}&a={AGE}&g={GENDER}&z={ZIP_CODE}", "https://x.test/s?t=abc123&a=34&g=F&z=SW1A1AA"},
		{"question codes", "https://x.test/s?t={ID}&q={61}", "https://x.test/s?t=abc123&q=3%2C5"},
		{"question text encoded", "https://x.test/s?t={ID}&q={70}", "https://x.test/s?t=abc123&q=A%26B+C"},
		{"unanswered and unknown", "https://x.test/s?t={ID}&q={99}&u={NOPE}", "https://x.test/s?t=abc123&q=&u="},
		{"lower-case placeholder", "https://x.test/s?t={id}", "https://x.test/s?t=abc123"},
		{"fragment kept", "https://x.test/s?a=1#frag", "https://x.test/s?a=1&id=abc123#frag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Build(c.link, v, secret); got != c.want {
				t.Errorf("Build(%q)\n got %q\nwant %q", c.link, got, c.want)
			}
		})
	}

	hashCases := []struct {
		name, link, unsigned string
	}{
		{"with id", "https://x.test/s?t={ID}&security_hash={LINK_HASH}", "https://x.test/s?t=abc123"},
		{"id appended before hash", "https://x.test/s?a=1&security_hash={LINK_HASH}", "https://x.test/s?a=1&id=abc123"},
		{"empty id= before hash", "https://x.test/s?id=&security_hash={LINK_HASH}", "https://x.test/s?id=abc123"},
		{"hash only parameter", "https://x.test/s?security_hash={LINK_HASH}", "https://x.test/s?id=abc123"},
		{"values substituted first", "https://x.test/s?t={ID}&g={GENDER}&r={RESPONDENT_ID}&security_hash={LINK_HASH}", "https://x.test/s?t=abc123&g=F&r=R1X"},
	}
	for _, c := range hashCases {
		t.Run(c.name, func(t *testing.T) {
			want := c.unsigned + "&security_hash=" + hmacSHA1(secret, c.unsigned)
			if got := Build(c.link, v, secret); got != want {
				t.Errorf("Build(%q)\n got %q\nwant %q", c.link, got, want)
			}
		})
	}
}
