package admin

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/svgchart"
	"github.com/switchboard/switchboard/persistence"
)

var (
	barRE    = regexp.MustCompile(`<text [^>]*text-anchor="end">([^<]*)</text>\n<rect [^>]*fill="([^"]*)"/>`)
	xLabelRE = regexp.MustCompile(`<text x="[0-9.]+" y="380.0" text-anchor="middle">([^<]*)</text>`)
	lineRE   = regexp.MustCompile(`<polyline points="([^"]*)" fill="none" stroke="([^"]*)"`)
	dotRE    = regexp.MustCompile(`<circle cx="([0-9.]+)" cy="[0-9.]+" r="([0-9]+)" fill="([^"]*)"/>`)
)

// barColors maps each bar's label to its colour in a drop-off chart.
func barColors(t *testing.T, chart string) map[string]string {
	t.Helper()
	if err := svgchart.Check([]byte(chart)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range barRE.FindAllStringSubmatch(chart, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestDropOffColorsByOutcome: an outcome has one colour on every campaign's drop-off chart,
// whatever its rank there, and no two outcomes share one.
func TestDropOffColorsByOutcome(t *testing.T) {
	first := barColors(t, string(dropOffChart([]persistence.OutcomeCount{{Outcome: "complete", Count: 9},
		{Outcome: "disqualified", Count: 2}})))
	second := barColors(t, string(dropOffChart([]persistence.OutcomeCount{{Outcome: "in_progress", Count: 7},
		{Outcome: "disqualified", Count: 5}, {Outcome: "over_quota", Count: 3}, {Outcome: "complete", Count: 1}})))
	if len(first) != 2 || len(second) != 4 {
		t.Fatalf("bars %v and %v", first, second)
	}
	for _, o := range []string{"complete", "screened out"} {
		if first[o] == "" || first[o] != second[o] {
			t.Errorf("%q is %s on one campaign and %s on the other", o, first[o], second[o])
		}
	}
	seen := map[string]string{}
	for o := range outcomeColors {
		c := outcomeColor(o)
		if other, ok := seen[c]; ok || c == otherColor || c == offersColor || c == entriesColor || c == evenPacingColor {
			t.Errorf("%s's colour %s is also another line's (%s)", o, c, other)
		}
		seen[c] = o
	}
	if outcomeColor("something new") != otherColor {
		t.Errorf("an unknown outcome is %s", outcomeColor("something new"))
	}
}

// TestPacingEndsToday: the completes line stops at today, the days ahead are not drawn as
// zero completes, and the even-pacing line goes on to the last day in field.
func TestPacingEndsToday(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	start := now.AddDate(0, 0, -2).Add(6 * time.Hour) // Dec 5, 15:30
	days := pacingDays(start, 7, 70, []persistence.DayCount{
		{Day: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Count: 3},
		{Day: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC), Count: 4},
	}, now)
	if len(days) != 7 || !days[0].Day.Equal(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%d days from %v, want 7 from Dec 5", len(days), days[0].Day)
	}
	for i, d := range days {
		if d.Ahead != (i > 2) {
			t.Errorf("%s: ahead %v", d.Day.Format(time.DateOnly), d.Ahead)
		}
	}
	if days[2].Cumulative != 7 || days[6].Even != 70 {
		t.Fatalf("today's cumulative %d (want 7), the last day's even pacing %d (want 70)", days[2].Cumulative, days[6].Even)
	}

	got, even := pacingSeries(days)
	today := svgchart.Day(now)
	if n := len(got.Points); n != 3 || got.Points[n-1].X != today || got.Points[n-1].Y != 7 {
		t.Fatalf("completes %v: want 3 days ending today (%v) at 7", got.Points, today)
	}
	if n := len(even.Points); n != 7 || even.Points[n-1].X != today+4 || even.Points[n-1].Y != 70 {
		t.Fatalf("even pacing %v: want the 7 days in field, to 70", even.Points)
	}

	chart := string(pacingChart(days))
	if err := svgchart.Check([]byte(chart)); err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{} // colour → points
	for _, m := range lineRE.FindAllStringSubmatch(chart, -1) {
		lines[m[2]] = len(strings.Fields(m[1]))
	}
	if lines[outcomeColor("complete")] != 3 || lines[evenPacingColor] != 7 {
		t.Fatalf("drawn lines (colour: points) %v: want completes over 3 days, even pacing over 7:\n%s", lines, chart)
	}
	if labels := xLabelRE.FindAllStringSubmatch(chart, -1); len(labels) == 0 || labels[len(labels)-1][1] != "Dec 11" {
		t.Fatalf("x labels %v: want dates to the last day in field", labels)
	}
}

// TestMarketChartDates: the operator's chart is over dates; a single day is a large dot
// under its date, and a day without anything breaks the lines.
func TestMarketChartDates(t *testing.T) {
	day := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	one := string(marketChart([]persistence.MarketDay{{Day: day, Offers: 40, Entries: 3, Completes: 1}}))
	if err := svgchart.Check([]byte(one)); err != nil {
		t.Fatal(err)
	}
	labels := xLabelRE.FindAllStringSubmatch(one, -1)
	if len(labels) != 1 || labels[0][1] != "Dec 7" {
		t.Fatalf("one day's x labels %v, want [Dec 7]", labels)
	}
	dots := dotRE.FindAllStringSubmatch(one, -1)
	if len(dots) != 3 {
		t.Fatalf("%d dots for one day of offers, entries and completes, want 3:\n%s", len(dots), one)
	}
	for _, d := range dots {
		if d[2] != "6" {
			t.Errorf("a lone day's dot of radius %s", d[2])
		}
	}
	if dots[2][3] != outcomeColor("complete") {
		t.Errorf("completes drawn in %s, not the complete outcome's colour", dots[2][3])
	}

	// Dec 1 and Dec 2 (completes on Dec 1 only), nothing on Dec 3 and 4, offers only on Dec 5.
	gappy := string(marketChart([]persistence.MarketDay{{Day: day.AddDate(0, 0, -6), Offers: 50, Entries: 5, Completes: 2},
		{Day: day.AddDate(0, 0, -5), Offers: 60, Entries: 6}, {Day: day.AddDate(0, 0, -2), Offers: 70}}))
	var lines []string
	for _, m := range lineRE.FindAllStringSubmatch(gappy, -1) {
		lines = append(lines, m[2]+":"+m[1])
	}
	lone := 0
	for _, d := range dotRE.FindAllStringSubmatch(gappy, -1) {
		if d[2] == "6" {
			lone++
		}
	}
	if len(lines) != 2 || lone != 2 {
		t.Fatalf("lines %q and %d lone dots: want offers and entries over Dec 1–2, Dec 5's offers and Dec 1's completes alone:\n%s",
			lines, lone, gappy)
	}
	if labels := xLabelRE.FindAllStringSubmatch(gappy, -1); labels[len(labels)-1][1] != "Dec 5" {
		t.Fatalf("x labels %v, want the last day's date last", labels)
	}
}

// TestEntriesPerOffer: no ratio while an hour's entries have no offers written in their hour
// or the one before.
func TestEntriesPerOffer(t *testing.T) {
	since := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	h := func(hour int, offers, entries int64) persistence.PublisherHour {
		return persistence.PublisherHour{Hour: since.Add(time.Duration(hour) * time.Hour), Offers: offers, Entries: entries}
	}
	for _, tc := range []struct {
		name  string
		hours []persistence.PublisherHour
		want  string
	}{
		{"nothing", nil, "–"},
		{"offers only", []persistence.PublisherHour{h(5, 10, 0)}, "0.0%"},
		{"entries, no offers written", []persistence.PublisherHour{h(5, 0, 3)}, "–"},
		{"this hour's offers not written yet", []persistence.PublisherHour{h(5, 4, 1), h(300, 0, 121)}, "–"},
		{"hours before offers were counted", []persistence.PublisherHour{h(2, 0, 50), h(200, 10, 2)}, "–"},
		{"written", []persistence.PublisherHour{h(5, 4, 1), h(300, 20, 5)}, "25.0%"},
		{"entered from the hour before's offers", []persistence.PublisherHour{h(299, 20, 4), h(300, 0, 1)}, "25.0%"},
		{"the window's first hour (its offers may lie before it)", []persistence.PublisherHour{h(0, 0, 1), h(1, 4, 1)}, "50.0%"},
	} {
		if got := entriesPerOffer(tc.hours, since); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
