package httpio

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
)

// QueryInt reads the optional integer query parameter name of a listing (a page size, a
// cursor), def when absent; a value that is not an integer from lo to hi is a 400 that names
// the parameter and states those bounds.
func QueryInt(args *fasthttp.Args, name string, def, lo, hi int) (int, error) {
	raw := args.Peek(name)
	if len(raw) == 0 {
		return def, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < lo || n > hi {
		return 0, fault.BadRequest("query parameter %s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}
