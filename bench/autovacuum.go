package bench

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Maintenance is what PostgreSQL's autovacuum did to one table during the load, on the serve
// process's clock: on a machine whose cores the server shares with the database, a vacuum
// or analyze of a large table is a burst that the slowest seconds of a phase can show.
type Maintenance struct {
	Table              string
	Vacuums, Analyzes  int64   // runs during the load
	LastVacuumSeconds  float64 `json:",omitempty"` // the last of each, since serve started (0: none)
	LastAnalyzeSeconds float64 `json:",omitempty"`
}

// tableMaintenance is one table's autovacuum figures from pg_stat_user_tables.
type tableMaintenance struct {
	vacuums, analyzes       int64
	lastVacuum, lastAnalyze time.Time
}

// readMaintenance reads every table's autovacuum and autoanalyze counts and last times.
func readMaintenance(ctx context.Context, url string) (map[string]tableMaintenance, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT relname, autovacuum_count, autoanalyze_count,
		coalesce(last_autovacuum, 'epoch'), coalesce(last_autoanalyze, 'epoch')
		FROM pg_stat_user_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]tableMaintenance{}
	for rows.Next() {
		var name string
		var t tableMaintenance
		if err := rows.Scan(&name, &t.vacuums, &t.analyzes, &t.lastVacuum, &t.lastAnalyze); err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, rows.Err()
}

// maintenanceBetween returns the tables autovacuum vacuumed or analyzed between two
// readings, by table name, with the last times on the clock of a process started at
// started.
func maintenanceBetween(before, after map[string]tableMaintenance, started time.Time) []Maintenance {
	var out []Maintenance
	for name, a := range after {
		b := before[name]
		m := Maintenance{Table: name, Vacuums: a.vacuums - b.vacuums, Analyzes: a.analyzes - b.analyzes}
		if m.Vacuums <= 0 && m.Analyzes <= 0 {
			continue
		}
		if m.Vacuums > 0 {
			m.LastVacuumSeconds = a.lastVacuum.Sub(started).Seconds()
		}
		if m.Analyzes > 0 {
			m.LastAnalyzeSeconds = a.lastAnalyze.Sub(started).Seconds()
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y Maintenance) int {
		if c := cmp.Compare(y.Vacuums+y.Analyzes, x.Vacuums+x.Analyzes); c != 0 {
			return c
		}
		return cmp.Compare(x.Table, y.Table)
	})
	return out
}
