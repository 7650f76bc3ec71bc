package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Quantile of xs (sorted copy), nearest-rank.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}

// WriteStormTable writes the storm results as Markdown.
func WriteStormTable(w io.Writer, r *StormResult) {
	fmt.Fprintf(w, "objects: %d (~1 KiB each, created in %s); schedule: %s; %d faults; seed %d; writer: 1 update / %s\n\n",
		r.Options.Objects, r.Populate.Round(time.Second), r.Options.Mix, len(r.Schedule), r.Options.Seed, r.Options.WriteEvery)
	fmt.Fprintln(w, "| reflector | LISTs (pages) | LIST bytes | watch-list req | watch-list bytes | full-state bytes | WATCH req | proxy LIST/WATCH | recovery p50 ms | recovery p99 ms | last fault → recovered s | writer stop → store = server s | CPU s | peak RSS MiB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, v := range r.Variants {
		conv := "never"
		if v.WriterStopToConverged >= 0 {
			conv = fmt.Sprintf("%.2f", v.WriterStopToConverged)
		}
		m := v.Meter
		fmt.Fprintf(w, "| %s | %d (%d) | %s | %d | %s | %s | %d | %d/%d | %.0f | %.0f | %.2f | %s | %.2f | %.0f |\n",
			v.Variant, m.ListOps, m.Lists, mib(m.ListBytes), m.WatchLists, mib(m.WatchListBytes), mib(m.ListBytes+m.WatchListBytes), m.Watches,
			v.ProxyLists, v.ProxyWatches, 1000*Quantile(v.Recovery, 0.5), 1000*Quantile(v.Recovery, 0.99), v.LastFaultToDelivery, conv,
			v.CPUSeconds, float64(v.MaxRSSKiB)/1024)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Recovery (fault → first store delivery after the next watch opened) by fault kind, p50 / max milliseconds:")
	fmt.Fprintln(w)
	writeByKind(w, r.Variants, func(v VariantResult) map[FaultKind][]float64 { return v.RecoveryByKind })
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Wait (fault → the reflector's next LIST or WATCH request: its backoff or Retry-After) by fault kind, p50 / max milliseconds:")
	fmt.Fprintln(w)
	writeByKind(w, r.Variants, func(v VariantResult) map[FaultKind][]float64 { return v.WaitByKind })
	for _, v := range r.Variants {
		if v.Err != "" {
			fmt.Fprintf(w, "\n%s error: %s\n", v.Variant, v.Err)
		}
	}
}

// writeByKind writes one row per reflector of p50 / max milliseconds per fault kind.
func writeByKind(w io.Writer, vs []VariantResult, of func(VariantResult) map[FaultKind][]float64) {
	kinds := []FaultKind{Open429, Open429RA, Event429, EventIE, EventReset, Event410}
	fmt.Fprint(w, "| reflector |")
	for _, k := range kinds {
		fmt.Fprintf(w, " %s |", k)
	}
	fmt.Fprint(w, "\n|---|")
	for range kinds {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for _, v := range vs {
		fmt.Fprintf(w, "| %s |", v.Variant)
		for _, k := range kinds {
			xs := of(v)[k]
			fmt.Fprintf(w, " %.0f / %.0f (n=%d) |", 1000*Quantile(xs, 0.5), 1000*Quantile(xs, 1), len(xs))
		}
		fmt.Fprintln(w)
	}
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// WriteSyncTable writes initial-sync results: medians with [min–max] per case and size.
func WriteSyncTable(w io.Writer, rs []SyncResult) {
	type key struct {
		server string
		n      int
		v      string
		wl     bool
	}
	groups := map[key][]SyncResult{}
	var keys []key
	for _, r := range rs {
		k := key{r.Server, r.Objects, r.Variant, r.WatchList}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.server != b.server {
			return strings.Compare(a.server, b.server)
		}
		if a.n != b.n {
			return a.n - b.n
		}
		if a.wl != b.wl {
			if a.wl {
				return 1
			}
			return -1
		}
		return strings.Compare(b.v, a.v)
	})
	col := func(g []SyncResult, f func(SyncResult) float64) string {
		xs := make([]float64, len(g))
		for i, r := range g {
			xs[i] = f(r)
		}
		return fmt.Sprintf("%.2f [%.2f–%.2f]", Quantile(xs, 0.5), Quantile(xs, 0), Quantile(xs, 1))
	}
	fmt.Fprintln(w, "| server | objects | mode | reflector | runs | sync s median [min–max] | peak heap MiB | peak live heap MiB | retained heap MiB | retained KiB/object | peak RSS MiB | CPU s | requests |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		g := groups[k]
		mode := "LIST (rv=0, limit 500)"
		if k.wl {
			mode = "WatchList"
		}
		s := col(g, func(r SyncResult) float64 { return r.SyncSeconds })
		ph := col(g, func(r SyncResult) float64 { return float64(r.PeakHeapBytes) / (1 << 20) })
		pl := col(g, func(r SyncResult) float64 { return float64(r.PeakLiveBytes) / (1 << 20) })
		rh := col(g, func(r SyncResult) float64 { return float64(r.RetainedHeapBytes) / (1 << 20) })
		per := col(g, func(r SyncResult) float64 { return float64(r.RetainedHeapBytes) / 1024 / float64(r.Objects) })
		rss := col(g, func(r SyncResult) float64 { return float64(r.MaxRSSKiB) / 1024 })
		cpu := col(g, func(r SyncResult) float64 { return r.CPUSeconds })
		m := g[0].Requests
		req := fmt.Sprintf("%d LIST pages, %s", m.Lists, mib(m.ListBytes))
		if k.wl {
			req = fmt.Sprintf("%d watch-list, %s", m.WatchLists, mib(m.WatchListBytes))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", k.server, k.n, mode, k.v, len(g), s, ph, pl, rh, per, rss, cpu, req)
	}
	for _, r := range rs {
		if r.Err != "" {
			fmt.Fprintf(w, "\n%s n=%d watchList=%v: %s\n", r.Variant, r.Objects, r.WatchList, r.Err)
		}
	}
}

// WriteStormSummary writes one table over several storm runs: a row per measure, a column per
// reflector, each cell the per-run values in run order ("a / b / c"). Ratios to rewatch are
// taken within each run.
func WriteStormSummary(w io.Writer, runs []*StormResult) {
	var names []string
	for _, r := range runs {
		for _, v := range r.Variants {
			if !slices.Contains(names, v.Variant) {
				names = append(names, v.Variant)
			}
		}
	}
	seeds := make([]string, len(runs))
	for i, r := range runs {
		seeds[i] = fmt.Sprint(r.Options.Seed)
	}
	fmt.Fprintf(w, "| seeds %s | %s |\n|---|", strings.Join(seeds, " / "), strings.Join(names, " | "))
	for range names {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	row := func(label string, f func(r *StormResult, v *VariantResult) string) {
		fmt.Fprintf(w, "| %s |", label)
		for _, n := range names {
			var cells []string
			for _, r := range runs {
				cell := "–"
				for i := range r.Variants {
					if r.Variants[i].Variant == n {
						cell = f(r, &r.Variants[i])
					}
				}
				cells = append(cells, cell)
			}
			fmt.Fprintf(w, " %s |", strings.Join(cells, " / "))
		}
		fmt.Fprintln(w)
	}
	fullState := func(v *VariantResult) int64 { return v.Meter.ListBytes + v.Meter.WatchListBytes }
	byKind := func(m map[FaultKind][]float64, q float64, kinds ...FaultKind) string {
		var xs []float64
		for _, k := range kinds {
			xs = append(xs, m[k]...)
		}
		if len(xs) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", Quantile(xs, q))
	}
	row("faults applied", func(_ *StormResult, v *VariantResult) string { return fmt.Sprint(len(v.Applied)) })
	row("LISTs + watch-lists (full-state transfers)", func(_ *StormResult, v *VariantResult) string {
		return fmt.Sprint(v.Meter.ListOps + v.Meter.WatchLists)
	})
	row("full-state bytes, MiB", func(_ *StormResult, v *VariantResult) string {
		return fmt.Sprintf("%.1f", float64(fullState(v))/(1<<20))
	})
	row("**rewatch bytes ÷ these**", func(r *StormResult, v *VariantResult) string {
		for i := range r.Variants {
			if r.Variants[i].Variant == VariantRewatch && fullState(v) > 0 {
				return fmt.Sprintf("%.2f", float64(fullState(&r.Variants[i]))/float64(fullState(v)))
			}
		}
		return "–"
	})
	row("WATCH requests", func(_ *StormResult, v *VariantResult) string { return fmt.Sprint(v.Meter.Watches) })
	row("recovery p50, s", func(_ *StormResult, v *VariantResult) string { return fmt.Sprintf("%.1f", Quantile(v.Recovery, 0.5)) })
	row("recovery p99, s", func(_ *StormResult, v *VariantResult) string { return fmt.Sprintf("%.1f", Quantile(v.Recovery, 0.99)) })
	row("wait after 429 + `Retry-After: 1`, max s", func(_ *StormResult, v *VariantResult) string {
		return byKind(v.WaitByKind, 1, Open429RA)
	})
	row("wait after 429 without Retry-After (open or event), p50 s", func(_ *StormResult, v *VariantResult) string {
		return byKind(v.WaitByKind, 0.5, Open429, Event429)
	})
	row("wait after InternalError, p50 s", func(_ *StormResult, v *VariantResult) string { return byKind(v.WaitByKind, 0.5, EventIE) })
	row("wait after reset, p50 s", func(_ *StormResult, v *VariantResult) string { return byKind(v.WaitByKind, 0.5, EventReset) })
	row("storm length (first → last fault), min", func(_ *StormResult, v *VariantResult) string {
		if len(v.Applied) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", float64(v.Applied[len(v.Applied)-1].End-v.Applied[0].Start)/6e10)
	})
	row("writer stop → store = server, s", func(_ *StormResult, v *VariantResult) string {
		if v.WriterStopToConverged < 0 {
			return "never"
		}
		return fmt.Sprintf("%.2f", v.WriterStopToConverged)
	})
	row("client CPU, s", func(_ *StormResult, v *VariantResult) string { return fmt.Sprintf("%.1f", v.CPUSeconds) })
	row("peak RSS, MiB", func(_ *StormResult, v *VariantResult) string { return fmt.Sprintf("%.0f", float64(v.MaxRSSKiB)/1024) })
}
