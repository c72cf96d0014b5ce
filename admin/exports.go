package admin

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// CSV exports are streamed (httpio.CSVStreams): memory does not grow with their size.
const (
	// ContentTypeCSV is the content type of every CSV download.
	ContentTypeCSV = httpio.ContentTypeCSV
	// maxExports is how many exports one process streams at once; each holds a pool
	// connection for as long as its client reads. Beyond it: 503 with Retry-After.
	maxExports = 8
)

// exportContext is the context an export's query runs under: detached from the request,
// since the rows are read after the handler returns.
type exportContext = context.Context

// wrapCSV is wrap for routes that answer CSV: the Accept header must admit text/csv or
// JSON (errors are JSON).
func (a *gate) wrapCSV(h handler) fasthttp.RequestHandler {
	return a.wrapFor(func(ctx *fasthttp.RequestCtx) bool { return httpio.AcceptsCSV(ctx) || httpio.AcceptsJSON(ctx) },
		"the Accept header must admit text/csv or application/json", h)
}

// streamCSV opens an export (errors are answered as JSON as usual) and streams it as the
// response body (httpio.CSVStreams.Stream).
func (a *insightsAPI) streamCSV(ctx *fasthttp.RequestCtx, filename string, campaignID int64,
	open func(exportContext) (*persistence.CSVExport, error)) error {
	return a.exports.Stream(ctx, filename, func(c context.Context) (httpio.CSVSource, error) {
		e, err := open(c)
		if err != nil {
			return nil, err
		}
		return e, nil
	}, zap.Int64("campaign_id", campaignID))
}

// idList is a filter of ids given as one string or an array of strings.
type idList struct {
	ids []string
}

func (l *idList) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		l.ids = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		l.ids = nil
		if s != "" {
			l.ids = []string{s}
		}
		return nil
	case len(b) > 0 && b[0] == '[':
		var raw []json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return err
		}
		l.ids = make([]string, 0, len(raw))
		for _, r := range raw {
			var s string
			if len(r) == 0 || r[0] != '"' || json.Unmarshal(r, &s) != nil {
				return errNotIDList
			}
			l.ids = append(l.ids, s)
		}
		return nil
	}
	return errNotIDList
}

var errNotIDList = errors.New("not a string or an array of strings")

// exportDemographics streams the demographics CSV of a campaign (docs/rules.md §8).
func (a *insightsAPI) exportDemographics(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cid, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	var in struct {
		TransactionIDs json.RawMessage `json:"transaction_ids"`
		PlayerIDs      json.RawMessage `json:"player_ids"`
	}
	if err := httpio.DecodeJSON(ctx.PostBody(), &in); err != nil {
		return err
	}
	var f persistence.DemographicsFilter
	for _, p := range []struct {
		field string
		raw   json.RawMessage
		dst   *[]string
	}{{"transaction_ids", in.TransactionIDs, &f.TransactionIDs}, {"player_ids", in.PlayerIDs, &f.PlayerIDs}} {
		if len(p.raw) == 0 {
			continue
		}
		var l idList
		if err := l.UnmarshalJSON(p.raw); err != nil {
			return fault.Invalid(p.field, "must be a string or an array of strings")
		}
		if len(l.ids) > maxIDs {
			return fault.Invalid(p.field, "must have at most %d ids", maxIDs)
		}
		*p.dst = l.ids
	}
	return a.streamCSV(ctx, "campaign_"+strconv.FormatInt(cid, 10)+"_demographics.csv", cid,
		func(c exportContext) (*persistence.CSVExport, error) {
			return a.store.OpenDemographicsExport(c, b.ID, cid, f)
		})
}
