package bench

import (
	"flag"
	"io"

	"k8s.io/klog/v2"
)

// client-go logs through klog to stderr, which go test interleaves with the benchmark lines
// ("Failed to watch … context canceled" when a benchmark stops its reflector); benchstat then
// drops the lines it splits. The benchmarks measure, they do not need client-go's log.
func init() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}
