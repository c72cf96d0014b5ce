package svgchart

import (
	"bytes"
	"math"
	"strings"
	"testing"
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
		"flat":   LineChart{Title: "one point", Series: []Series{{Name: "a", Points: []Point{{5, 5}}}}}.SVG(),
		"bars":   BarChart{Title: "throughput", Unit: "req/s", Bars: []Bar{{"offers", 20000, "70% of floor"}, {"floor <x>", 30000, ""}, {"zero", 0, ""}}}.SVG(),
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
	b := BarChart{Title: "Bars", Desc: "d", Bars: []Bar{{"a", 1, ""}}}.Inline()
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
