package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func barChart(title, ylabel string, names []string, vals []float64, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	bars, err := plotter.NewBarChart(plotter.Values(vals), vg.Points(40))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	p.Add(bars)
	p.NominalX(names...)
	return p.Save(vg.Length(110*len(names))+vg.Points(80), 4*vg.Inch, path)
}

// StormCharts draws, over one or more storm runs, the median full-state bytes per reflector
// and the pooled recovery latency distributions (box plots plus every point).
func StormCharts(runs []*StormResult, dir string) error {
	var names []string
	bytesOf := map[string][]float64{}
	recov := map[string][]float64{}
	for _, r := range runs {
		for i := range r.Variants {
			v := &r.Variants[i]
			if _, ok := bytesOf[v.Variant]; !ok {
				names = append(names, v.Variant)
			}
			bytesOf[v.Variant] = append(bytesOf[v.Variant], float64(v.Meter.ListBytes+v.Meter.WatchListBytes)/(1<<20))
			recov[v.Variant] = append(recov[v.Variant], v.Recovery...)
		}
	}
	var bytes []float64
	for _, n := range names {
		bytes = append(bytes, Quantile(bytesOf[n], 0.5))
	}
	if err := barChart(fmt.Sprintf("Storm: full-state bytes (LIST + watch-list), median of %d runs", len(runs)),
		"MiB", names, bytes, filepath.Join(dir, "storm-list-bytes.svg")); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Storm: recovery latency, %d runs pooled", len(runs))
	p.Y.Label.Text = "seconds (fault → delivery on a new watch)"
	for i, n := range names {
		ms := plotter.Values(recov[n])
		if len(ms) == 0 {
			ms = plotter.Values{0}
		}
		b, err := plotter.NewBoxPlot(vg.Points(30), float64(i), ms)
		if err != nil {
			return err
		}
		p.Add(b)
		pts := make(plotter.XYs, len(ms))
		for j, y := range ms {
			pts[j] = plotter.XY{X: float64(i) + 0.3, Y: y}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Radius = vg.Points(1.5)
		p.Add(sc)
	}
	p.NominalX(names...)
	return p.Save(vg.Length(110*len(names))+vg.Points(80), 4*vg.Inch, filepath.Join(dir, "storm-recovery.svg"))
}

var benchLine = regexp.MustCompile(`^Benchmark(Throughput\w+?)-\d+\s.*?\s([\d.]+) events/s`)

// ThroughputChart draws the median events/s per benchmark from go test -bench output.
func ThroughputChart(in io.Reader, path string) (map[string][]float64, error) {
	got := map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		if _, ok := got[m[1]]; !ok {
			order = append(order, m[1])
		}
		got[m[1]] = append(got[m[1]], v)
	}
	var vals []float64
	for _, n := range order {
		vals = append(vals, Quantile(got[n], 0.5))
	}
	names := slices.Clone(order)
	for i, n := range names {
		names[i] = n[len("Throughput"):]
	}
	return got, barChart("Watch stream throughput (median)", "events/s", names, vals, path)
}

// FleetCharts draws, for each scenario and fleet size, the server's configmap requests per
// second over time with one line per kind of reflector, and the full-state bytes each fleet
// was served.
func FleetCharts(rs []FleetResult, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	type group struct {
		scenario string
		size     int
	}
	var groups []group
	byGroup := map[group][]FleetResult{}
	for _, r := range rs {
		if r.Err != "" && r.Unsynced == 0 { // a fleet that did not get in sync has figures
			continue
		}
		g := group{r.Scenario, r.Reflectors}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], r)
	}
	for _, g := range groups {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, %d reflectors: server requests per second", g.scenario, g.size)
		p.X.Label.Text = "seconds"
		p.Y.Label.Text = "configmap requests/s"
		var lines []any
		var names []string
		var mib []float64
		for _, r := range byGroup[g] {
			pts := make(plotter.XYs, len(r.ServerRequestsPerSecond))
			for i, v := range r.ServerRequestsPerSecond {
				pts[i] = plotter.XY{X: float64(i), Y: v}
			}
			lines = append(lines, r.Variant, pts)
			names = append(names, r.Variant)
			mib = append(mib, float64(r.FullStateBytes)/(1<<20))
		}
		if err := plotutil.AddLines(p, lines...); err != nil {
			return err
		}
		base := filepath.Join(dir, fmt.Sprintf("fleet-%s-%d", g.scenario, g.size))
		if err := p.Save(8*vg.Inch, 4*vg.Inch, base+"-requests.svg"); err != nil {
			return err
		}
		if err := barChart(fmt.Sprintf("%s, %d reflectors: full state served", g.scenario, g.size), "MiB", names, mib, base+"-full-state.svg"); err != nil {
			return err
		}
	}
	return nil
}
