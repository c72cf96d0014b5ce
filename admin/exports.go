package admin

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// CSV exports are streamed: rows go from a PostgreSQL query through a CSV encoder to the
// connection as the client reads them, so memory does not grow with the export's size.
const (
	// ContentTypeCSV is the content type of every CSV download.
	ContentTypeCSV = "text/csv; charset=utf-8"
	// exportStall is the longest the client may stop reading before the export is dropped:
	// every block written pushes the connection's write deadline this far ahead (the
	// server's own WriteTimeout would otherwise bound the whole download).
	exportStall = time.Minute
	// exportMax bounds one export (and the database connection it holds).
	exportMax = time.Hour
	// exportBlock is the size of the blocks written to the connection.
	exportBlock = 64 << 10
	// maxExports is how many exports one process streams at once; each holds a pool
	// connection for as long as its client reads. Beyond it: 503 with Retry-After.
	maxExports = 8
)

// exportContext is the context an export's query runs under: detached from the request,
// since the rows are read after the handler returns.
type exportContext = context.Context

// wrapCSV is wrap for routes that answer CSV: the Accept header must admit text/csv or
// JSON (errors are JSON).
func (a *API) wrapCSV(h handler) fasthttp.RequestHandler {
	return a.wrapFor(func(ctx *fasthttp.RequestCtx) bool { return httpio.AcceptsCSV(ctx) || httpio.AcceptsJSON(ctx) },
		"the Accept header must admit text/csv or application/json", h)
}

// streamCSV opens an export (errors are answered as JSON as usual) and streams it as the
// response body: 200 text/csv, an attachment named filename, chunked. A database failure
// after the first row aborts the chunked body, so that the client sees a broken download
// rather than a short file.
func (a *API) streamCSV(ctx *fasthttp.RequestCtx, filename string, campaignID int64,
	open func(exportContext) (*persistence.CSVExport, error)) error {
	select {
	case a.exports <- struct{}{}:
	default:
		ctx.Response.Header.Set("Retry-After", "5")
		return &fault.Error{Kind: fault.KindUnavailable, Message: "too many exports in progress; retry shortly"}
	}
	c, cancel := httpio.DBContext(exportMax)
	exp, err := open(c)
	if err != nil {
		cancel()
		<-a.exports
		return err
	}
	pr, pw := io.Pipe()
	conn, log := ctx.Conn(), a.d.Log
	go func() {
		defer func() { <-a.exports }()
		defer cancel()
		start := time.Now()
		bw := bufio.NewWriterSize(stallWriter{w: pw, conn: conn}, exportBlock)
		n, err := exp.WriteCSV(csv.NewWriter(bw))
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err) // nil: the body ends normally
		switch {
		case err == nil:
			log.Debug("export streamed", zap.Int64("campaign_id", campaignID), zap.Int64("rows", n),
				zap.Duration("took", time.Since(start)))
		case errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed) || isClientGone(err):
			log.Info("export abandoned by the client", zap.Int64("campaign_id", campaignID), zap.Int64("rows", n))
		default:
			log.Error("export failed", zap.Int64("campaign_id", campaignID), zap.Int64("rows", n), zap.Error(err))
		}
	}()
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(ContentTypeCSV)
	ctx.Response.Header.Set("Content-Disposition", "attachment; filename="+filename)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetBodyStream(pr, -1)
	return nil
}

// isClientGone reports an error of the pipe's reader side: fasthttp closes the body stream
// with the connection's write error when the client goes away.
func isClientGone(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// stallWriter writes blocks to the pipe the server reads the body from, moving the
// connection's write deadline exportStall ahead before each.
type stallWriter struct {
	w    io.Writer
	conn net.Conn
}

func (s stallWriter) Write(p []byte) (int, error) {
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(exportStall)) // a closed conn fails the write anyway
	}
	return s.w.Write(p)
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
func (a *API) exportDemographics(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
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
			return a.d.DB.OpenDemographicsExport(c, b.ID, cid, f)
		})
}
