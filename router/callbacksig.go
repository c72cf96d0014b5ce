package router

import (
	"crypto/sha1"
	"strings"

	"github.com/switchboard/switchboard/internal/keyedmac"
)

const trSechParam = "&tr_sech="

// SplitCallback splits a callback's request URI (path and query as received) into the part
// tr_sech signs and the tr_sech value. ok is false when there is no query, no tr_sech, or
// tr_sech is not the last parameter.
func SplitCallback(requestURI string) (signed, sech string, ok bool) {
	q := strings.IndexByte(requestURI, '?')
	i := strings.LastIndex(requestURI, trSechParam)
	if q < 0 || i < q {
		return "", "", false
	}
	sech = requestURI[i+len(trSechParam):]
	if strings.ContainsAny(sech, "&#") {
		return "", "", false
	}
	return requestURI[:i], sech, true
}

// callbackMAC signs callbacks: HMAC-SHA1 under each buyer's api_secret.
var callbackMAC = keyedmac.New(sha1.New)

// CallbackHash is the tr_sech of a callback: lower-case hex HMAC-SHA1 keyed with the buyer's
// api_secret of publicURL + path + '?' + query up to "&tr_sech=".
func CallbackHash(publicURL, signed, secret string) string {
	return callbackMAC.Hex(secret, publicURL, signed)
}

// VerifyCallback reports whether requestURI carries a valid, final tr_sech for secret,
// compared in constant time.
func VerifyCallback(publicURL, requestURI, secret string) bool {
	signed, sech, ok := SplitCallback(requestURI)
	if !ok || len(sech) != 2*sha1.Size {
		return false
	}
	return callbackMAC.EqualHex(sech, secret, publicURL, signed)
}
