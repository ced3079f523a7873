package console

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// chart is the overview's chart, drawn as an inline SVG on the server from the
// database's counts (not this process's memory, so every replica shows the same):
// bars of arrivals and processed receipts per bucket, and lines of failed attempts
// and of attempts that put a receipt to review, on one labelled scale.
type chart struct {
	Width, Height float64
	// The plot area.
	Left, Top, Right, Bottom float64
	Bars                     []chartBar
	Failed, Exhausted        string // polyline points
	YTicks                   []chartTick
	XTicks                   []chartTick
	Max                      int64
	From, To                 string
	Bucket                   string
	Received, Processed      int64
	FailedTotal, ToReview    int64
}

type chartBar struct {
	X, W           float64
	RY, RH, PY, PH float64
	Title          string
}

type chartTick struct {
	At    float64
	Label string
}

const (
	chartWidth  = 760
	chartHeight = 200
	chartLeft   = 44
	chartTop    = 8
	chartBottom = 22
)

// niceMax rounds n up to 1, 2 or 5 times a power of ten, so that the axis reads
// round numbers.
func niceMax(n int64) int64 {
	if n <= 1 {
		return 1
	}
	p := int64(math.Pow10(int(math.Floor(math.Log10(float64(n))))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= n {
			return m * p
		}
	}
	return 10 * p
}

func newChart(points []*driver.SeriesPoint, bucket time.Duration, now time.Time) *chart {
	c := &chart{Width: chartWidth, Height: chartHeight, Left: chartLeft, Top: chartTop,
		Right: chartWidth - 8, Bottom: chartHeight - chartBottom, Bucket: bucketName(bucket)}
	var top int64
	for _, p := range points {
		top = max(top, p.Received, p.Processed, p.Failed, p.Exhausted)
		c.Received += p.Received
		c.Processed += p.Processed
		c.FailedTotal += p.Failed
		c.ToReview += p.Exhausted
	}
	c.Max = niceMax(top)
	plotH := c.Bottom - c.Top
	y := func(n int64) float64 { return c.Bottom - float64(n)*plotH/float64(c.Max) }
	for _, f := range []int64{0, 2, 4} {
		v := c.Max * f / 4
		c.YTicks = append(c.YTicks, chartTick{At: y(v), Label: itoa(v)})
	}
	if len(points) == 0 {
		return c
	}
	first, last := points[0].Start.UTC(), points[len(points)-1].Start.Add(bucket).UTC()
	if last.After(now) {
		last = now.UTC()
	}
	// The range with its dates: a day's window spans two of them.
	c.From, c.To = first.Format("2006-01-02 15:04"), last.Format("15:04")
	if first.YearDay() != last.YearDay() {
		c.To = last.Format("2006-01-02 15:04")
	}
	slot := (c.Right - c.Left) / float64(len(points))
	var failed, exhausted []string
	every := max(len(points)/6, 1)
	for i, p := range points {
		x := c.Left + float64(i)*slot
		c.Bars = append(c.Bars, chartBar{
			X: x + slot*0.1, W: slot * 0.4,
			RY: y(p.Received), RH: c.Bottom - y(p.Received), PY: y(p.Processed), PH: c.Bottom - y(p.Processed),
			Title: fmt.Sprintf("%s: %d received, %d processed, %d failed attempts, %d to review",
				p.Start.UTC().Format("2006-01-02 15:04"), p.Received, p.Processed, p.Failed, p.Exhausted),
		})
		mid := strconv.FormatFloat(x+slot/2, 'f', 1, 64)
		failed = append(failed, mid+","+strconv.FormatFloat(y(p.Failed), 'f', 1, 64))
		exhausted = append(exhausted, mid+","+strconv.FormatFloat(y(p.Exhausted), 'f', 1, 64))
		if i%every == 0 {
			label := p.Start.UTC().Format("15:04")
			if i == 0 || p.Start.UTC().Hour() == 0 && p.Start.UTC().Minute() == 0 {
				label = p.Start.UTC().Format("Jan 2 15:04")
			}
			c.XTicks = append(c.XTicks, chartTick{At: x, Label: label})
		}
	}
	c.Failed, c.Exhausted = strings.Join(failed, " "), strings.Join(exhausted, " ")
	return c
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// bucketName is a bucket's span in words: "1 minute", "30 minutes".
func bucketName(d time.Duration) string {
	if m := int(d / time.Minute); m != 1 {
		return strconv.Itoa(m) + " minutes"
	}
	return "1 minute"
}
