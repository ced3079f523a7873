package console

import (
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// chart is the overview's bar chart of arrivals and processed receipts, drawn as an
// inline SVG on the server from the database's counts (not this process's memory, so
// every replica shows the same).
type chart struct {
	Width, Height float64
	Bars          []chartBar
	Max           int64
	From, To      string
	Bucket        string
	Received      int64
	Processed     int64
}

type chartBar struct {
	X, W           float64
	RY, RH, PY, PH float64
	Title          string
}

const (
	chartWidth  = 720
	chartHeight = 140
)

func newChart(points []*driver.SeriesPoint, bucket time.Duration) *chart {
	c := &chart{Width: chartWidth, Height: chartHeight + 14, Bucket: bucket.String()}
	for _, p := range points {
		c.Max = max(c.Max, p.Received, p.Processed)
		c.Received += p.Received
		c.Processed += p.Processed
	}
	if len(points) == 0 {
		return c
	}
	c.From = points[0].Start.UTC().Format("15:04")
	c.To = points[len(points)-1].Start.Add(bucket).UTC().Format("15:04")
	scale := 0.0
	if c.Max > 0 {
		scale = float64(chartHeight) / float64(c.Max)
	}
	slot := float64(chartWidth) / float64(len(points))
	for i, p := range points {
		rh, ph := float64(p.Received)*scale, float64(p.Processed)*scale
		c.Bars = append(c.Bars, chartBar{
			X: float64(i) * slot, W: slot / 2.2,
			RY: chartHeight - rh, RH: rh, PY: chartHeight - ph, PH: ph,
			Title: p.Start.UTC().Format("15:04") + ": " + itoa(p.Received) + " received, " + itoa(p.Processed) + " processed",
		})
	}
	return c
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
