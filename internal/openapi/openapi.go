// Package openapi holds the OpenAPI 3.1 documents of Switchboard's two public interfaces,
// embedded in the binary, and serves them: buyer.json describes the buyer API (/api/v1,
// /insights_api and the test-session link), supply.json the supply partner API
// (/supply_api/v4, entry, the hosted pages, the buyer's end link and the partner postback
// as a webhook). The documents are written by hand from the registered routes; tests
// validate every recorded exchange (admin/testdata/golden, the exchanges of
// docs/buyer-integration.md and docs/supply-api.md) against them, so they cannot drift
// from what the server answers.
//
// The JSON files are the source: edit them by hand. When a route or a field changes:
//
//  1. change buyer.json or supply.json (schemas are closed: additionalProperties false and
//     required listed, so a new response field must be added or the validation fails;
//     write a union of types as oneOf, which oapi-codegen can generate);
//  2. go test ./internal/openapi -run TestDocsCopies -update   (docs/openapi/ copies)
//  3. go test ./cmd/apidocs/clientgen -update                  (the generated clients)
//  4. go test -race ./internal/openapi ./cmd/apidocs           (every recorded exchange
//     validates; the documents list exactly the app's registered routes; the walk-through
//     runs through the clients).
//
// Record new exchanges (admin golden files, cmd/guides) first: they are what step 4 checks.
package openapi

import (
	"crypto/sha256"
	_ "embed" // the documents
	"encoding/hex"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/httpio"
)

var (
	//go:embed buyer.json
	buyerJSON []byte
	//go:embed supply.json
	supplyJSON []byte
)

// The routes the documents are served at: public, like the documentation they are.
const (
	BuyerPath  = "/openapi/buyer.json"
	SupplyPath = "/openapi/supply.json"
)

// Buyer returns a copy of the buyer API's document.
func Buyer() []byte { return append([]byte(nil), buyerJSON...) }

// Supply returns a copy of the supply API's document.
func Supply() []byte { return append([]byte(nil), supplyJSON...) }

// cacheControl lets clients and proxies keep a document for an hour; the ETag (a hash of
// the document, so it changes with the binary that serves it) revalidates it after.
const cacheControl = "public, max-age=3600"

// Register mounts GET BuyerPath and GET SupplyPath on mux. They need no credentials.
func Register(mux *httpio.Mux) {
	mux.Handle("GET", BuyerPath, serve(buyerJSON))
	mux.Handle("GET", SupplyPath, serve(supplyJSON))
}

// serve answers doc as application/json with a strong ETag, and 304 to a request whose
// If-None-Match carries it.
func serve(doc []byte) fasthttp.RequestHandler {
	sum := sha256.Sum256(doc)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return func(ctx *fasthttp.RequestCtx) {
		h := &ctx.Response.Header
		h.Set("Cache-Control", cacheControl)
		h.Set("ETag", etag)
		if string(ctx.Request.Header.Peek("If-None-Match")) == etag {
			ctx.SetStatusCode(fasthttp.StatusNotModified)
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(doc)
	}
}
