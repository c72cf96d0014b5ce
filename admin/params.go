package admin

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// pathID reads an integer path parameter; anything else is an unknown resource (404).
func pathID(ctx *fasthttp.RequestCtx, name string) (int64, error) {
	s, _ := ctx.UserValue(name).(string)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fault.NotFound("not found")
	}
	return n, nil
}

// queryInt reads an id query parameter (1 to 2^31 − 1); missing (when required), malformed
// or outside those bounds is a 400 that states them.
func queryInt(ctx *fasthttp.RequestCtx, name string, required bool) (*int, error) {
	raw := ctx.QueryArgs().Peek(name)
	if len(raw) == 0 {
		if required {
			return nil, fault.BadRequest("query parameter %s is required", name)
		}
		return nil, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil && !httpio.IsRangeError(err) {
		return nil, fault.BadRequest("query parameter %s must be an integer", name)
	}
	if err != nil || n < 1 || n > maxInt32 {
		return nil, fault.BadRequest("query parameter %s must be an integer from 1 to %d", name, maxInt32)
	}
	v := int(n)
	return &v, nil
}

// defaultPerPage is per_page of a paged list that gives only page.
const defaultPerPage = 100

// pageQuery reads the optional paging of a list: page (from 1) and per_page
// (1..MaxCampaignsPerPage). paged is false when neither is given; a bad value is a 422
// naming the parameter.
func pageQuery(ctx *fasthttp.RequestCtx) (page, perPage int, paged bool, err error) {
	page, perPage = 1, defaultPerPage
	args := ctx.QueryArgs()
	for _, p := range []struct {
		name string
		max  int64
		v    *int
	}{{"page", maxInt32, &page}, {"per_page", persistence.MaxCampaignsPerPage, &perPage}} {
		if !args.Has(p.name) {
			continue
		}
		paged = true
		n, perr := strconv.ParseInt(string(args.Peek(p.name)), 10, 64)
		if perr != nil || n < 1 || n > p.max {
			return 0, 0, false, fault.Invalid(p.name, "must be an integer from 1 to %d", p.max)
		}
		*p.v = int(n)
	}
	return page, perPage, paged, nil
}
