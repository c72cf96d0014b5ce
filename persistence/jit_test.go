package persistence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestOpenTurnsJITOff: the service's connections run with PostgreSQL's JIT off, unless the
// database URL sets jit itself.
func TestOpenTurnsJITOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, c := range []struct{ url, want string }{{url, "off"}, {url + sep + "jit=on", "on"}} {
		db, err := persistence.Open(ctx, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		err = db.Pool.QueryRow(ctx, `SHOW jit`).Scan(&jit)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if jit != c.want {
			t.Errorf("%s: jit %s, want %s", c.url, jit, c.want)
		}
	}
}
