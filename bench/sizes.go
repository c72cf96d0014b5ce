package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// SizeRow is what one run (its results.json) says of offers against the floor and of
// memory, for the comparison of market sizes.
type SizeRow struct {
	Path                    string
	Started                 time.Time
	Campaigns, Participants int
	// Offers and Distinct are the offers maximum throughput with random participants and
	// with each participant once; Floor is the floor's in the same run (0: not measured).
	Offers, Distinct, Floor float64
	PeakRSS                 int64
}

// Share returns v over the run's floor (0 without a floor).
func (r SizeRow) Share(v float64) float64 {
	if r.Floor <= 0 {
		return 0
	}
	return v / r.Floor
}

// ReadSizes reads the results.json of each path, ordered by market size.
func ReadSizes(paths []string) ([]SizeRow, error) {
	var rows []SizeRow
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		row := SizeRow{Path: path, Started: s.Started, Campaigns: s.Campaigns, Participants: s.Participants}
		for _, p := range s.Phases {
			row.PeakRSS = max(row.PeakRSS, p.HWM)
			if p.Mode != "closed" {
				continue
			}
			switch p.Scenario {
			case ScOffers:
				row.Offers = p.Throughput
			case ScOffersDistinct:
				row.Distinct = p.Throughput
			case ScFloor:
				row.Floor = p.Throughput
			}
		}
		if row.Floor <= 0 || row.Offers <= 0 {
			return nil, fmt.Errorf("%s: no offers or floor phase measured", path)
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b SizeRow) int {
		return cmp.Or(cmp.Compare(a.Campaigns, b.Campaigns), cmp.Compare(a.Participants, b.Participants))
	})
	return rows, nil
}

// offersTarget is the least share of the floor offers must reach at a market of campaigns.
func offersTarget(campaigns int) float64 {
	if campaigns >= 100_000 {
		return TargetOffersVsFloorLarge
	}
	return TargetOffersVsFloor
}

// SizesMarkdown is the table of the runs by market size.
func SizesMarkdown(rows []SizeRow) string {
	var b strings.Builder
	b.WriteString("| campaigns | participants | run | offers req/s | vs floor | offers, each participant once | vs floor | floor req/s | target | peak RSS |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		distinct := "– | –" // a run from before the phase existed
		if r.Distinct > 0 {
			distinct = fmt.Sprintf("%.0f | %.0f%%", r.Distinct, 100*r.Share(r.Distinct))
		}
		fmt.Fprintf(&b, "| %d | %d | %s | %.0f | %.0f%% | %s | %.0f | ≥ %.0f%% | %s |\n", r.Campaigns, r.Participants,
			r.Started.UTC().Format("2006-01-02 15:04"), r.Offers, 100*r.Share(r.Offers), distinct,
			r.Floor, 100*offersTarget(r.Campaigns), mib(r.PeakRSS))
	}
	return b.String()
}

// SizesChart draws offers as a share of the floor against the market's size, with the
// target at each size; of several runs at one size, the latest.
func SizesChart(rows []SizeRow) LineChart {
	random := Series{Name: "offers"}
	distinct := Series{Name: "offers, each once", Dashed: true}
	target := Series{Name: "target at each size", Dashed: true}
	var latest []SizeRow
	for _, r := range rows {
		if n := len(latest); n > 0 && latest[n-1].Campaigns == r.Campaigns {
			if r.Started.After(latest[n-1].Started) {
				latest[n-1] = r
			}
			continue
		}
		latest = append(latest, r)
	}
	for _, r := range latest {
		x := float64(r.Campaigns)
		random.Points = append(random.Points, Point{X: x, Y: 100 * r.Share(r.Offers)})
		if r.Distinct > 0 {
			distinct.Points = append(distinct.Points, Point{X: x, Y: 100 * r.Share(r.Distinct)})
		}
		target.Points = append(target.Points, Point{X: x, Y: 100 * offersTarget(r.Campaigns)})
	}
	return LineChart{Title: "GET /campaigns throughput vs the floor, by market size", XLabel: "active campaigns (log scale)",
		YLabel: "% of the floor's req/s (same run)", LogX: true, Series: []Series{random, distinct, target}}
}
