package httpio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
)

// CSV downloads are streamed: rows go from a PostgreSQL query through a CSV encoder to the
// connection as the client reads them, so memory does not grow with the download's size.
const (
	// ContentTypeCSV is the content type of every CSV download.
	ContentTypeCSV = "text/csv; charset=utf-8"
	// streamStall is the longest the client may stop reading before the download is
	// dropped: every block written pushes the connection's write deadline this far ahead
	// (the server's own WriteTimeout would otherwise bound the whole download).
	streamStall = time.Minute
	// streamMax bounds one download (and the database connection it holds).
	streamMax = time.Hour
	// streamBlock is the size of the blocks written to the connection.
	streamBlock = 64 << 10
)

// CSVSource is an open CSV whose rows are read as they are written (persistence.CSVExport):
// WriteCSV writes the header and every row and releases it.
type CSVSource interface {
	WriteCSV(w io.Writer) (int64, error)
}

// CSVStreams streams CSV downloads, at most a fixed number at once per process: each holds
// a pool connection for as long as its client reads.
type CSVStreams struct {
	slots chan struct{}
	log   *zap.Logger
}

// NewCSVStreams returns streams of at most max downloads at once, logging to log.
func NewCSVStreams(max int, log *zap.Logger) *CSVStreams {
	return &CSVStreams{slots: make(chan struct{}, max), log: log}
}

// Stream opens a download with open (its errors are answered as usual, by the caller) and
// streams it as the response body: 200 text/csv, an attachment named filename, chunked.
// Beyond the streams' bound it answers 503 with Retry-After. A database failure after the
// first row aborts the chunked body, so that the client sees a broken download rather than
// a short file. The query runs under a context of its own (the rows are read after the
// handler returns); fields name the download in the log.
func (s *CSVStreams) Stream(ctx *fasthttp.RequestCtx, filename string, open func(context.Context) (CSVSource, error), fields ...zap.Field) error {
	select {
	case s.slots <- struct{}{}:
	default:
		ctx.Response.Header.Set("Retry-After", "5")
		return &fault.Error{Kind: fault.KindUnavailable, Message: "too many exports in progress; retry shortly"}
	}
	c, cancel := DBContext(streamMax)
	src, err := open(c)
	if err != nil {
		cancel()
		<-s.slots
		return err
	}
	pr, pw := io.Pipe()
	conn, log := ctx.Conn(), s.log
	go func() {
		defer func() { <-s.slots }()
		defer cancel()
		start := time.Now()
		bw := bufio.NewWriterSize(stallWriter{w: pw, conn: conn}, streamBlock)
		n, err := src.WriteCSV(bw)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err) // nil: the body ends normally
		fields := append(fields, zap.Int64("rows", n))
		switch {
		case err == nil:
			log.Debug("export streamed", append(fields, zap.Duration("took", time.Since(start)))...)
		case errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed) || isClientGone(err):
			log.Info("export abandoned by the client", fields...)
		default:
			log.Error("export failed", append(fields, zap.Error(err))...)
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
// connection's write deadline streamStall ahead before each.
type stallWriter struct {
	w    io.Writer
	conn net.Conn
}

func (s stallWriter) Write(p []byte) (int, error) {
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(streamStall)) // a closed conn fails the write anyway
	}
	return s.w.Write(p)
}

// WantsCSV reports whether a route that answers JSON or CSV should answer CSV: the Accept
// header admits text/csv and either does not admit JSON or names text/csv itself (a
// missing header, */* or application/json get JSON).
func WantsCSV(ctx *fasthttp.RequestCtx) bool {
	h := ctx.Request.Header.Peek("Accept")
	if !accepts(h, "text/csv") {
		return false
	}
	return !accepts(h, "application/json") || namesType(h, "text/csv")
}

// namesType reports whether the Accept header names mediaType itself with a non-zero q.
func namesType(header []byte, mediaType string) bool {
	for _, part := range bytes.Split(header, []byte(",")) {
		rng, _, _ := bytes.Cut(part, []byte(";"))
		if string(bytes.ToLower(bytes.TrimSpace(rng))) == mediaType {
			return accepts(part, mediaType)
		}
	}
	return false
}
