package payout

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/keyedmac"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
)

// Fields are the values a partner URL carries.
type Fields struct {
	TID    string // the transaction id; empty (and left out) only when entry was refused
	Status string // one of the Status constants
	Reward int64  // in-app currency; a reversal carries the amount reversed, positive

	// Postback only.
	PayoutUSD      USD    // a reversal carries the amount reversed, positive
	UserIdentifier string // the partner's own user identifier

	// Attempts, when positive, is the number of sessions of the re-routing chain this result
	// ends (docs/rules.md §10), added as the last parameter before sech; 0: left out.
	Attempts int
	// EventID is the ledger event a postback tells of (persistence.EventID), added after
	// user_identifier as event_id; "": left out. Redirects never carry it.
	EventID string
}

// sechParam separates the signed query from its signature. It is always the last parameter.
const sechParam = "&sech="

// RedirectURL is where a participant goes back to: the publisher's redirect URL with tid
// (when set), status and reward added after the query it already has, then sech.
func RedirectURL(pub persistence.Publisher, f Fields) string {
	params := make([]string, 0, 6)
	if f.TID != "" {
		params = append(params, "tid", f.TID)
	}
	params = append(params, "status", f.Status, "reward", strconv.FormatInt(f.Reward, 10))
	if f.Attempts > 0 {
		params = append(params, "attempts", strconv.Itoa(f.Attempts))
	}
	return Sign(pub.RedirectURL, pub.APISecret, params...)
}

// NotEligibleURL is the redirect of a participant refused at entry (docs/rules.md §6):
// status=over_quota, reward=0, no tid.
func NotEligibleURL(pub persistence.Publisher) string {
	return RedirectURL(pub, Fields{Status: outcome.OverQuota})
}

// PostbackURL is the server-to-server notification of f: the publisher's postback URL with
// tid, status, reward, payout_usd (four decimals) and user_identifier, then sech. It is ""
// when the publisher has no postback URL.
func PostbackURL(pub persistence.Publisher, f Fields) string {
	if pub.PostbackURL == "" {
		return ""
	}
	kv := []string{
		"tid", f.TID,
		"status", f.Status,
		"reward", strconv.FormatInt(f.Reward, 10),
		"payout_usd", f.PayoutUSD.String(),
		"user_identifier", f.UserIdentifier,
	}
	if f.EventID != "" {
		kv = append(kv, "event_id", f.EventID)
	}
	if f.Attempts > 0 {
		kv = append(kv, "attempts", strconv.Itoa(f.Attempts))
	}
	return Sign(pub.PostbackURL, pub.APISecret, kv...)
}

// sechMAC signs redirects and postbacks: HMAC-SHA256 under each partner's secret.
var sechMAC = keyedmac.New(sha256.New)

// Sign appends the name/value pairs kv (values query-escaped) to base's query, after
// whatever query base already has (kept byte for byte), then appends
// sech = lower-case hex HMAC-SHA256, keyed with secret, of the whole raw query before
// "&sech=". A fragment in base stays at the end.
func Sign(base, secret string, kv ...string) string {
	base, frag, hasFrag := strings.Cut(base, "#")
	var b strings.Builder
	b.Grow(len(base) + len(frag) + 96 + 16*len(kv))
	b.WriteString(base)
	q := strings.IndexByte(base, '?')
	switch {
	case q < 0:
		b.WriteByte('?')
		q = len(base)
	case q == len(base)-1 || base[len(base)-1] == '&':
	default:
		b.WriteByte('&')
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(kv[i+1]))
	}
	var sech [2 * sha256.Size]byte
	signed := b.String()[q+1:]
	b.WriteString(sechParam)
	b.Write(sechMAC.AppendHex(sech[:0], secret, signed))
	if hasFrag {
		b.WriteByte('#')
		b.WriteString(frag)
	}
	return b.String()
}

// VerifySech reports whether rawQuery (a URL's raw query, without '?' or fragment) ends in
// a sech parameter that is the lower-case hex HMAC-SHA256, keyed with secret, of everything
// before "&sech=". The comparison is constant-time. This is what a partner runs on the
// redirects and postbacks it receives.
func VerifySech(rawQuery, secret string) bool {
	i := strings.LastIndex(rawQuery, sechParam)
	if i < 0 {
		return false
	}
	sig := rawQuery[i+len(sechParam):]
	if len(sig) != hex.EncodedLen(sha256.Size) {
		return false
	}
	for j := 0; j < len(sig); j++ {
		if c := sig[j]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(rawQuery[:i]))
	return hmac.Equal(got, mac.Sum(nil))
}

// OutcomePostback builds, for the caller to store with the outcome (in the transaction that
// records it), the postback of a session's outcome: f's Status and amounts. Its URL is empty
// for a publisher without a postback URL (nothing is stored).
func OutcomePostback(pub persistence.Publisher, f Fields) (persistence.Postback, error) {
	return postback(pub, f, persistence.PostbackOutcome)
}

// ReversalPostback builds, for the transaction that rejects a complete to store, its reversal
// postback: status=reversed, with f's Reward and PayoutUSD the amounts reversed (positive;
// the partner subtracts them). Its URL is empty for a publisher without a postback URL.
func ReversalPostback(pub persistence.Publisher, f Fields) (persistence.Postback, error) {
	f.Status = outcome.Reversed
	return postback(pub, f, persistence.PostbackReversal)
}

// AcceptancePostback builds, for the caller to enqueue, the postback of a session that
// reconcile made an accepted complete: status=complete, with f's Reward and PayoutUSD the
// complete's payout, under its own kind. Its URL is empty for a publisher without a postback URL.
func AcceptancePostback(pub persistence.Publisher, f Fields) (persistence.Postback, error) {
	f.Status = outcome.Complete
	return postback(pub, f, persistence.PostbackAcceptance)
}

// postback builds the outbox row of f; its URL is empty for a publisher without a postback
// URL (nothing is stored).
func postback(pub persistence.Publisher, f Fields, kind string) (persistence.Postback, error) {
	if pub.PostbackURL != "" && f.TID == "" {
		return persistence.Postback{}, fault.Internal(errors.New("payout: postback without a tid"))
	}
	return persistence.Postback{TID: f.TID, Kind: kind, PublisherID: pub.ID, URL: PostbackURL(pub, f), EventID: f.EventID}, nil
}
