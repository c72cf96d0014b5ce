// Package svgchart draws the project's charts as SVG on the server: line charts over numeric
// (optionally logarithmic) or date axes and horizontal bar charts. The benchmark report writes
// them as standalone files; the web console inlines them in its pages (Inline), where each
// carries a <title> and a <desc> as its text alternative and nothing that needs a script or a
// style attribute (the console's Content-Security-Policy allows neither).
package svgchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
	"time"
)

// Point is one (x, y) of a series.
type Point struct{ X, Y float64 }

// Series is one line of a LineChart. A point that cannot be drawn (NaN, or not positive on a
// logarithmic axis) breaks the line; a point left without a neighbour is drawn as a large dot.
type Series struct {
	Name   string
	Points []Point
	Dashed bool
	// Bare draws the line without a dot at each point: for a long series sampled over time.
	Bare bool
	// Color is the line's colour (an SVG colour); empty: the palette's, by the series' place.
	// A caller whose series stand for the same thing on several charts sets it.
	Color string
}

// Mark is a vertical line across a LineChart at X with a label: when something began.
type Mark struct {
	X     float64
	Label string
}

// LineChart is a chart of lines over numeric axes, either of them logarithmic, or over days.
type LineChart struct {
	Title, XLabel, YLabel string
	Desc                  string // the text alternative's longer part (<desc>); empty: none
	LogX, LogY            bool
	// Dates makes X a day (Day): the axis reaches half a day beyond the first and the last,
	// so that a single day stands in the middle, and its ticks are whole days labelled as
	// dates ("Dec 7"), the last day always among them. LogX is ignored.
	Dates  bool
	Series []Series
	// Marks are drawn behind the series, their labels written upwards from the plot's foot.
	Marks []Mark
}

// Bar is one bar of a BarChart.
type Bar struct {
	Label string
	Value float64
	Note  string // printed after the value
	// Color is the bar's colour (an SVG colour); empty: the palette's, by the bar's place.
	Color string
}

// BarChart is a horizontal bar chart.
type BarChart struct {
	Title, Unit string
	Desc        string // the text alternative's longer part (<desc>); empty: none
	Bars        []Bar
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"}

// colorOf is c (escaped for an attribute), or the palette's colour for place i when c is empty.
func colorOf(c string, i int) string {
	if c != "" {
		return esc(c)
	}
	return palette[i%len(palette)]
}

// Day is t's UTC day as an X value of a Dates chart: whole days since the Unix epoch.
func Day(t time.Time) float64 { return math.Floor(float64(t.Unix()) / 86400) }

// dayTicks returns whole days covering [lo, hi] (days), counted back from the last one at a
// step of 1, 2, 7, 14, 28 days or more, for at most 8 labels.
func dayTicks(lo, hi float64) []float64 {
	step := 1.0
	for _, s := range []float64{1, 2, 7, 14, 28, 91, 182, 364} {
		step = s
		if (hi-lo)/s <= 8 {
			break
		}
	}
	var out []float64
	for v := math.Floor(hi); v >= lo; v -= step {
		out = append(out, v)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// fmtDay labels day d (Day) as "Dec 7".
func fmtDay(d float64) string { return time.Unix(int64(d)*86400, 0).UTC().Format("Jan 2") }

// loneR and dotR are the radii of a point without a neighbour on its line (the only mark of
// its value, so large enough to see on a phone, where the chart is drawn at half its size)
// and of a point on a line.
const loneR, dotR = 6, 3

const (
	chartW, chartH                     = 720, 420
	marginL, marginR, marginT, marginB = 80, 190, 40, 56
)

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) //nolint:errcheck // strings.Builder does not fail
	return b.String()
}

// svgHead opens the document: an XML declaration for a standalone file; for an inline
// chart, role="img" and a <desc> when desc is set.
func svgHead(b *bytes.Buffer, w, h int, title, desc string, inline bool) {
	role := ""
	if inline {
		role = ` role="img"`
	} else {
		fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg"%s width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", role, w, h, w, h)
	fmt.Fprintf(b, `<title>%s</title>`+"\n", esc(title))
	if desc != "" {
		fmt.Fprintf(b, `<desc>%s</desc>`+"\n", esc(desc))
	}
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginL, esc(title))
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// logTicks returns the powers of ten (and 2×, 5× when few) covering [lo, hi].
func logTicks(lo, hi float64) []float64 {
	var out []float64
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	for e := a; e <= b; e++ {
		for _, m := range []float64{1, 2, 5} {
			if b-a > 3 && m != 1 {
				continue
			}
			out = append(out, m*math.Pow(10, e))
		}
	}
	return out
}

func fmtTick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e6:
		return trimFloat(v/1e6) + "M"
	case math.Abs(v) >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.ContainsAny(s, "e") {
		s = fmt.Sprintf("%g", v)
	}
	return s
}

// SVG renders the chart as a standalone SVG document.
func (c LineChart) SVG() []byte { return c.render(false) }

// Inline renders the chart as an svg element to embed in an HTML page.
func (c LineChart) Inline() []byte { return c.render(true) }

func (c LineChart) render(inline bool) []byte {
	var b bytes.Buffer
	svgHead(&b, chartW, chartH, c.Title, c.Desc, inline)
	if c.Dates {
		c.LogX = false
	}
	a := c.area()
	c.writeAxes(&b, &a)
	c.writeMarks(&b, &a)
	for i, s := range c.Series {
		c.writeSeries(&b, &a, i, s)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// plotArea places values in the plot: the axes' ranges, rounded out to their ticks, and the
// plot's size in pixels.
type plotArea struct {
	logX, logY         bool
	xlo, xhi, ylo, yhi float64
	xt, yt             []float64 // the ticks' values
	pw, ph             float64   // the plot's width and height
}

// sx is the horizontal pixel of value v.
func (a *plotArea) sx(v float64) float64 {
	if a.logX {
		return marginL + a.pw*(math.Log10(v)-math.Log10(a.xlo))/(math.Log10(a.xhi)-math.Log10(a.xlo))
	}
	return marginL + a.pw*(v-a.xlo)/(a.xhi-a.xlo)
}

// sy is the vertical pixel of value v.
func (a *plotArea) sy(v float64) float64 {
	if a.logY {
		return marginT + a.ph - a.ph*(math.Log10(v)-math.Log10(a.ylo))/(math.Log10(a.yhi)-math.Log10(a.ylo))
	}
	return marginT + a.ph - a.ph*(v-a.ylo)/(a.yhi-a.ylo)
}

// skip reports whether p cannot be drawn: NaN, or not positive on a logarithmic axis.
func (c LineChart) skip(p Point) bool {
	return (c.LogX && p.X <= 0) || (c.LogY && p.Y <= 0) || math.IsNaN(p.X) || math.IsNaN(p.Y)
}

// dataRange is the range of the points that can be drawn (1 to 10 on both axes when there
// is none, reported empty), widened to 0 on a linear Y axis, and on a linear X axis whose
// values lie closer to 0 than they spread.
func (c LineChart) dataRange() (xlo, xhi, ylo, yhi float64, empty bool) {
	xlo, xhi, ylo, yhi = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if c.skip(p) {
				continue
			}
			xlo, xhi = math.Min(xlo, p.X), math.Max(xhi, p.X)
			ylo, yhi = math.Min(ylo, p.Y), math.Max(yhi, p.Y)
		}
	}
	empty = math.IsInf(xlo, 0)
	if empty {
		xlo, xhi, ylo, yhi = 1, 10, 1, 10
	}
	if !c.LogY {
		ylo = 0
	}
	if !c.LogX && !c.Dates && xlo > 0 && xlo < (xhi-xlo) {
		xlo = 0
	}
	return xlo, xhi, ylo, yhi, empty
}

// area lays the data out: ticks on both axes (days, powers of ten or round numbers), the
// ranges rounded out to them.
func (c LineChart) area() plotArea {
	xlo, xhi, ylo, yhi, empty := c.dataRange()
	a := plotArea{logX: c.LogX, logY: c.LogY,
		pw: float64(chartW - marginL - marginR), ph: float64(chartH - marginT - marginB)}
	switch {
	case c.Dates:
		xlo, xhi = xlo-0.5, xhi+0.5
		if !empty { // no day to label
			a.xt = dayTicks(xlo, xhi)
		}
	case c.LogX:
		a.xt = logTicks(xlo, xhi)
		xlo, xhi = math.Min(xlo, a.xt[0]), math.Max(xhi, a.xt[len(a.xt)-1])
	default:
		a.xt = niceTicks(xlo, xhi, 6)
		xlo, xhi = a.xt[0], math.Max(xhi, a.xt[len(a.xt)-1])
	}
	if c.LogY {
		a.yt = logTicks(ylo, yhi)
		ylo, yhi = math.Min(ylo, a.yt[0]), math.Max(yhi, a.yt[len(a.yt)-1])
	} else {
		a.yt = niceTicks(ylo, yhi, 6)
		ylo, yhi = a.yt[0], math.Max(yhi, a.yt[len(a.yt)-1])
	}
	a.xlo, a.xhi, a.ylo, a.yhi = xlo, xhi, ylo, yhi
	return a
}

// writeAxes writes the grid lines with their tick labels, the plot's frame and the axes'
// labels.
func (c LineChart) writeAxes(b *bytes.Buffer, a *plotArea) {
	for _, v := range a.xt {
		x := a.sx(v)
		label := fmtTick(v)
		if c.Dates {
			label = fmtDay(v)
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", x, marginT, x, marginT+a.ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginT+a.ph+16, esc(label))
	}
	for _, v := range a.yt {
		y := a.sy(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", marginL, y, marginL+a.pw, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, esc(fmtTick(v)))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", marginL, marginT, a.pw, a.ph)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+a.pw/2, chartH-12, esc(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+a.ph/2, esc(c.YLabel))
}

// writeMarks writes the marks that fall inside the X range, behind the series.
func (c LineChart) writeMarks(b *bytes.Buffer, a *plotArea) {
	for _, m := range c.Marks {
		if (c.LogX && m.X <= 0) || math.IsNaN(m.X) || m.X < a.xlo || m.X > a.xhi {
			continue
		}
		x := a.sx(m.X)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="2 3"/>`+"\n", x, marginT, x, marginT+a.ph)
		fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" font-size="10" fill="#555">%s</text>`+"\n", x+10, marginT+a.ph-4, esc(m.Label))
	}
}

// writeSeries writes series s, the i-th: a line per run of points that can be drawn, a dot
// per point (unless Bare; a lone point always, larger), and its entry in the legend.
func (c LineChart) writeSeries(b *bytes.Buffer, a *plotArea, i int, s Series) {
	col := colorOf(s.Color, i)
	dash := ""
	if s.Dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	for _, pts := range c.runs(a, s) {
		r := dotR
		if len(pts) == 1 {
			r = loneR
		} else {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), col, dash)
			if s.Bare {
				continue // a dot per sample would hide the line
			}
		}
		for _, p := range pts {
			x, y, _ := strings.Cut(p, ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="%d" fill="%s"/>`+"\n", x, y, r, col)
		}
	}
	ly := marginT + 10 + 18*i
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n",
		chartW-marginR+12, ly, chartW-marginR+36, ly, col, dash)
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", chartW-marginR+42, ly+4, esc(s.Name))
}

// runs are the runs of s's points that can be drawn, each one line, as "x,y" pixels.
func (c LineChart) runs(a *plotArea, s Series) [][]string {
	var runs [][]string
	var run []string
	for _, p := range s.Points {
		if c.skip(p) {
			if len(run) > 0 {
				runs, run = append(runs, run), nil
			}
			continue
		}
		run = append(run, fmt.Sprintf("%.1f,%.1f", a.sx(p.X), a.sy(p.Y)))
	}
	if len(run) > 0 {
		runs = append(runs, run)
	}
	return runs
}

// SVG renders the chart as a standalone SVG document.
func (c BarChart) SVG() []byte { return c.render(false) }

// Inline renders the chart as an svg element to embed in an HTML page.
func (c BarChart) Inline() []byte { return c.render(true) }

func (c BarChart) render(inline bool) []byte {
	var b bytes.Buffer
	const rowH, labelW = 30, 230
	h := marginT + rowH*len(c.Bars) + 40
	svgHead(&b, chartW+80, h, c.Title, c.Desc, inline)
	hi := 0.0
	for _, x := range c.Bars {
		hi = math.Max(hi, x.Value)
	}
	if hi <= 0 {
		hi = 1
	}
	pw := float64(chartW + 80 - labelW - 200)
	for i, x := range c.Bars {
		y := marginT + rowH*i
		w := pw * math.Max(x.Value, 0) / hi
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+rowH/2+4, esc(x.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", labelW, y+4, w, rowH-8, colorOf(x.Color, i))
		label := fmtTick(x.Value) + " " + c.Unit
		if x.Note != "" {
			label += " (" + x.Note + ")"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(labelW)+w+6, y+rowH/2+4, esc(label))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
