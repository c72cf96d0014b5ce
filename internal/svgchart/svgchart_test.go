package svgchart

import (
	"bytes"
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wellFormed fails t when doc is not a well-formed SVG document (Check).
func wellFormed(t *testing.T, name string, doc []byte) {
	t.Helper()
	if err := Check(doc); err != nil {
		t.Errorf("%s: %v\n%s", name, err, doc)
	}
}

func TestSVGWellFormed(t *testing.T) {
	charts := map[string][]byte{
		"line": LineChart{Title: `Latency <p99> & "friends"`, XLabel: "req/s", YLabel: "ms", LogY: true, Series: []Series{
			{Name: "p50 <a&b>", Points: []Point{{1000, 0.5}, {2000, 0.7}, {4000, 3}}},
			{Name: "p99", Points: []Point{{1000, 2}, {2000, 4}, {4000, 80}}, Dashed: true},
			{Name: "zero and negative are skipped on log axes", Points: []Point{{0, 0}, {-1, 5}}},
		}}.SVG(),
		"loglog": LineChart{Title: "engine", LogX: true, LogY: true, Series: []Series{{Name: "p50", Points: []Point{{1000, 3}, {10000, 20}, {100000, 300}}}}}.SVG(),
		"empty":  LineChart{Title: "nothing"}.SVG(),
		"marks": LineChart{Title: "memory", Series: []Series{{Name: "rss", Bare: true, Points: []Point{{0, 10}, {5, 40}, {9, 30}}}},
			Marks: []Mark{{0, "ready"}, {4, "offers <max>"}, {-3, "before the axis"}, {math.NaN(), "nan"}}}.SVG(),
		"flat": LineChart{Title: "one point", Series: []Series{{Name: "a", Points: []Point{{5, 5}}}}}.SVG(),
		"bars": BarChart{Title: "throughput", Unit: "req/s", Bars: []Bar{{Label: "offers", Value: 20000, Note: "70% of floor"},
			{Label: "floor <x>", Value: 30000}, {Label: "zero", Color: `"><x`}}}.SVG(),
		"nobars": BarChart{Title: "none"}.SVG(),
	}
	for name, doc := range charts {
		wellFormed(t, name, doc)
		if bytes.Contains(doc, []byte("NaN")) || bytes.Contains(doc, []byte("Inf")) {
			t.Errorf("%s: contains NaN or Inf coordinates", name)
		}
	}
}

// TestMarksAndBareSeries: a mark inside the axis is a line and its label, one outside it
// is not drawn; a bare series is a line without dots.
func TestMarksAndBareSeries(t *testing.T) {
	c := LineChart{Title: "m", Series: []Series{{Name: "rss", Bare: true, Points: []Point{{0, 1}, {10, 3}, {20, 2}}}},
		Marks: []Mark{{5, "offers"}, {15, "entries &"}, {500, "after the axis"}}}
	doc := string(c.SVG())
	wellFormed(t, "marks", []byte(doc))
	if strings.Contains(doc, "<circle") {
		t.Errorf("a bare series drew dots:\n%s", doc)
	}
	if !strings.Contains(doc, ">offers</text>") || !strings.Contains(doc, ">entries &amp;</text>") || strings.Contains(doc, "after the axis") {
		t.Errorf("marks drawn wrong:\n%s", doc)
	}
	if n := strings.Count(doc, `stroke-dasharray="2 3"`); n != 2 {
		t.Errorf("%d mark lines, want 2", n)
	}
	c.Series[0].Bare = false
	if n := strings.Count(string(c.SVG()), "<circle"); n != 3 {
		t.Errorf("%d dots on a plain series of 3 points, want 3", n)
	}
}

// TestInline checks the console's form: no XML declaration, role="img", the title and the
// escaped desc, and the same drawing as the standalone document.
func TestInline(t *testing.T) {
	c := LineChart{Title: "Completes", Desc: `a <b> & "c"`, Series: []Series{{Name: "x", Points: []Point{{1, 2}, {2, 3}}}}}
	in := c.Inline()
	wellFormed(t, "inline", in)
	if bytes.HasPrefix(in, []byte("<?xml")) || !bytes.Contains(in, []byte(`role="img"`)) ||
		!bytes.Contains(in, []byte("<title>Completes</title>\n<desc>a &lt;b&gt; &amp; &#34;c&#34;</desc>")) {
		t.Fatalf("inline chart:\n%s", in)
	}
	standalone := c.SVG()
	if _, body, _ := strings.Cut(string(standalone), "</title>"); !strings.HasSuffix(string(in), body) {
		t.Fatalf("inline drawing differs from the standalone one")
	}
	b := BarChart{Title: "Bars", Desc: "d", Bars: []Bar{{Label: "a", Value: 1}}}.Inline()
	wellFormed(t, "inline bars", b)
	if !bytes.Contains(b, []byte("<desc>d</desc>")) {
		t.Fatalf("inline bars:\n%s", b)
	}
}

// TestCheckRefuses: Check refuses what a browser would not draw as an SVG image.
func TestCheckRefuses(t *testing.T) {
	for _, doc := range []string{
		``,
		`<svg></svg>`, // no SVG namespace
		`<svg xmlns="http://www.w3.org/2000/svg"><g></svg>`,
		`<html xmlns="http://www.w3.org/2000/svg"></html>`,
		`<svg xmlns="http://www.w3.org/2000/svg"><text>a & b</text></svg>`,
	} {
		if Check([]byte(doc)) == nil {
			t.Errorf("Check accepted %q", doc)
		}
	}
	if err := Check([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>a &amp; b</text></svg>`)); err != nil {
		t.Errorf("Check refused a good document: %v", err)
	}
}

// element is one element of a chart: its name, attributes and text.
type element struct {
	name string
	attr map[string]string
	text string
}

// elements lists doc's elements in document order.
func elements(t *testing.T, doc []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var out []element
	var open []int
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			el := element{name: e.Name.Local, attr: map[string]string{}}
			for _, a := range e.Attr {
				el.attr[a.Name.Local] = a.Value
			}
			out = append(out, el)
			open = append(open, len(out)-1)
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(e)
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
	return out
}

// xLabels are the texts under the plot: the X axis's tick labels.
func xLabels(t *testing.T, doc []byte) []string {
	t.Helper()
	var out []string
	for _, e := range elements(t, doc) {
		if e.name == "text" && e.attr["y"] == strconv.Itoa(chartH-marginB+16)+".0" {
			out = append(out, e.text)
		}
	}
	return out
}

// TestColors: a series or a bar that carries a colour is drawn in it, wherever it stands;
// the others take the palette's by place.
func TestColors(t *testing.T) {
	line := LineChart{Title: "c", Series: []Series{
		{Name: "first", Points: []Point{{1, 1}, {2, 2}}},
		{Name: "own", Color: "#123456", Points: []Point{{1, 2}, {2, 3}}},
	}}.SVG()
	var strokes []string
	for _, e := range elements(t, line) {
		if e.name == "polyline" {
			strokes = append(strokes, e.attr["stroke"])
		}
	}
	if len(strokes) != 2 || strokes[0] != palette[0] || strokes[1] != "#123456" {
		t.Fatalf("line colours %q", strokes)
	}
	bars := BarChart{Title: "b", Bars: []Bar{{Label: "a", Value: 1}, {Label: "b", Value: 2, Color: "#abcdef"}, {Label: "c", Value: 3}}}.SVG()
	var fills []string
	for _, e := range elements(t, bars) {
		if e.name == "rect" && e.attr["x"] != "" {
			fills = append(fills, e.attr["fill"])
		}
	}
	if want := []string{palette[0], "#abcdef", palette[2]}; strings.Join(fills, " ") != strings.Join(want, " ") {
		t.Fatalf("bar colours %q, want %q", fills, want)
	}
}

// TestDates: on a date axis the ticks are whole days labelled as dates, the last day among
// them; a single day stands in the middle of the plot as a large dot under its date.
func TestDates(t *testing.T) {
	day := Day(time.Date(2026, 12, 7, 15, 4, 5, 0, time.UTC))
	if day != Day(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)) || day != Day(time.Date(2026, 12, 7, 23, 59, 59, 0, time.UTC)) {
		t.Fatalf("Day is not the UTC day: %v", day)
	}
	one := LineChart{Title: "one day", Dates: true, LogY: true, Series: []Series{
		{Name: "offers", Points: []Point{{day, 40}}},
		{Name: "completes", Bare: true, Points: []Point{{day, 2}}},
	}}.Inline()
	wellFormed(t, "one day", one)
	if got := xLabels(t, one); len(got) != 1 || got[0] != "Dec 7" {
		t.Fatalf("one day's x labels %q, want [Dec 7]", got)
	}
	var dots int
	for _, e := range elements(t, one) {
		if e.name == "circle" {
			dots++
			cx, _ := strconv.ParseFloat(e.attr["cx"], 64)
			if mid := marginL + float64(chartW-marginL-marginR)/2; math.Abs(cx-mid) > 0.1 || e.attr["r"] != strconv.Itoa(loneR) {
				t.Errorf("one day's dot at x %v (the plot's middle: %v), r %s", cx, mid, e.attr["r"])
			}
		}
	}
	if dots != 2 {
		t.Fatalf("%d dots for one day of two series (a bare one among them), want 2:\n%s", dots, one)
	}

	var pts []Point
	for i := range 14 {
		pts = append(pts, Point{day - 13 + float64(i), float64(i + 1)})
	}
	two := LineChart{Title: "two weeks", Dates: true, Series: []Series{{Name: "n", Points: pts}}}.SVG()
	got := xLabels(t, two)
	if len(got) < 4 || len(got) > 8 || got[len(got)-1] != "Dec 7" || got[0] != "Nov 25" {
		t.Fatalf("two weeks' x labels %q: want every other day back from Dec 7", got)
	}
	if empty := (LineChart{Title: "none", Dates: true}).SVG(); len(xLabels(t, empty)) != 0 {
		t.Fatalf("a date axis without a day labels %q", xLabels(t, empty))
	}
}

// TestGaps: a point that cannot be drawn breaks its line instead of being bridged, and a
// point left alone between two gaps is a large dot.
func TestGaps(t *testing.T) {
	doc := LineChart{Title: "gaps", LogY: true, Series: []Series{{Name: "n", Bare: true,
		Points: []Point{{1, 5}, {2, 6}, {3, 0}, {4, 7}, {5, math.NaN()}, {6, 8}, {7, 9}}}}}.SVG()
	wellFormed(t, "gaps", doc)
	var lines, lone int
	for _, e := range elements(t, doc) {
		switch {
		case e.name == "polyline":
			lines++
			if n := len(strings.Fields(e.attr["points"])); n != 2 {
				t.Errorf("a line of %d points, want 2", n)
			}
		case e.name == "circle" && e.attr["r"] == strconv.Itoa(loneR):
			lone++
		case e.name == "circle":
			t.Errorf("a dot on a bare line")
		}
	}
	if lines != 2 || lone != 1 {
		t.Fatalf("%d lines and %d lone dots, want 2 and 1:\n%s", lines, lone, doc)
	}
}
