package svgchart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// wellFormed parses doc to the end and checks its root is an svg element.
func wellFormed(t *testing.T, name string, doc []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	root := ""
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v\n%s", name, err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = e.Name.Local
				if e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("%s: root namespace %q", name, e.Name.Space)
				}
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if root != "svg" || depth != 0 {
		t.Errorf("%s: root %q, depth at end %d", name, root, depth)
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
