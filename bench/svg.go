package bench

import "github.com/switchboard/switchboard/internal/svgchart"

// The report's charts are drawn by internal/svgchart, which the web console shares.
type (
	// Point is one (x, y) of a series.
	Point = svgchart.Point
	// Series is one line of a LineChart.
	Series = svgchart.Series
	// LineChart is a chart of lines over numeric axes, either of them logarithmic.
	LineChart = svgchart.LineChart
	// Mark is a labelled vertical line across a LineChart.
	Mark = svgchart.Mark
	// Bar is one bar of a BarChart.
	Bar = svgchart.Bar
	// BarChart is a horizontal bar chart.
	BarChart = svgchart.BarChart
)
