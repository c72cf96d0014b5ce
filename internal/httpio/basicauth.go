package httpio

import (
	"bytes"
	"encoding/base64"

	"github.com/valyala/fasthttp"
)

// BasicAuth parses an `Authorization: Basic base64(user:password)` header.
func BasicAuth(ctx *fasthttp.RequestCtx) (user, password string, ok bool) {
	return ParseBasicAuth(ctx.Request.Header.Peek("Authorization"))
}

// ParseBasicAuth parses the value of an Authorization header carrying Basic credentials.
func ParseBasicAuth(h []byte) (user, password string, ok bool) {
	const prefix = "basic "
	if len(h) <= len(prefix) || !bytes.EqualFold(h[:len(prefix)], []byte(prefix)) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(h[len(prefix):])))
	if err != nil {
		return "", "", false
	}
	u, p, found := bytes.Cut(raw, []byte{':'})
	if !found || len(u) == 0 || len(p) == 0 {
		return "", "", false
	}
	return string(u), string(p), true
}
