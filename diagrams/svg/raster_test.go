package svg

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/diagrams/svg/raster"
)

// The PNG must show what the SVG shows. rsvg-convert (librsvg, from Debian's librsvg2-bin,
// installed by scripts/install-packages.sh) is the reference: it renders the same SVG at the
// same size, and the two pictures are compared where the layout put things. Fonts differ (the
// Go fonts here, DejaVu Sans there), shapes may not: the share of dark pixels is within 1.5×
// of the reference (go-graphviz's own PNG renderer, which filled every edge, was 59% against
// 1.5%), every node and label box has ink in both, and the inside of every node is as light
// in both (a filled shape would not be).
func TestPNGMatchesRsvgConvert(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("rsvg-convert not found (scripts/install-packages.sh installs librsvg2-bin): %v", err)
		}
		t.Skip("rsvg-convert not found: install librsvg2-bin (scripts/install-packages.sh) to compare the PNG with librsvg's")
	}
	for _, c := range []struct {
		view string
		dot  string
	}{{"full", diagrams.DOT()}, {"overview", diagrams.OverviewDOT()}} {
		t.Run(c.view, func(t *testing.T) {
			doc, err := rendered(c.view, "svg")
			require.NoError(t, err)
			// At one pixel a point rather than PNGScale's two: the same drawing, a quarter
			// of the pixels to compare (under -race every pixel counts).
			ours, err := raster.Rasterize(doc, comparedScale)
			require.NoError(t, err)
			size := ours.Bounds().Size()

			svgPath := filepath.Join(t.TempDir(), "d.svg")
			require.NoError(t, os.WriteFile(svgPath, doc, 0o644))
			out, err := exec.Command(rsvg, "-w", strconv.Itoa(size.X), "-h", strconv.Itoa(size.Y), svgPath).Output()
			require.NoError(t, err)
			ref, err := png.Decode(bytes.NewReader(out))
			require.NoError(t, err)
			require.Equal(t, size, ref.Bounds().Size(), "rsvg-convert drew another size")

			oursDark, refDark := darkShare(ours, ours.Bounds()), darkShare(ref, ref.Bounds())
			t.Logf("dark pixels: %.2f%% here, %.2f%% by rsvg-convert", 100*oursDark, 100*refDark)
			require.Positive(t, refDark)
			assert.LessOrEqual(t, oursDark/refDark, 1.5)
			assert.GreaterOrEqual(t, oursDark/refDark, 1/1.5)

			l, err := LayOut(context.Background(), []byte(c.dot))
			require.NoError(t, err)
			toPixels := pixelMap(t, doc)
			for _, n := range l.Nodes {
				if n.Name == "init" {
					continue // the start point: a dot, too small to hold an inside
				}
				r := toPixels(n.Box)
				assert.Positive(t, darkShare(ours, r), "node %s has no ink here", n.Name)
				assert.Positive(t, darkShare(ref, r), "node %s has no ink in rsvg-convert's", n.Name)
				// The middle third, left of the name: inside the border, outside the text.
				in := image.Rect(r.Min.X+r.Dx()/10, r.Min.Y+r.Dy()/3, r.Min.X+r.Dx()/6, r.Max.Y-r.Dy()/3)
				assert.Less(t, darkShare(ours, in), 0.2, "node %s is filled", n.Name)
			}
			for _, lb := range l.Labels {
				r := toPixels(lb.Box)
				o, f := darkShare(ours, r), darkShare(ref, r)
				assert.Positive(t, o, "label of %s has no ink here", lb.Name)
				assert.Positive(t, f, "label of %s has no ink in rsvg-convert's", lb.Name)
			}
		})
	}
}

const comparedScale = 1

// PNG is the SVG drawn at PNGScale, as a PNG.
func TestPNGIsTheSVGDrawnAtItsScale(t *testing.T) {
	doc, err := rendered("overview", "svg")
	require.NoError(t, err)
	b, err := rendered("overview", "png")
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	m := regexp.MustCompile(`viewBox="0.00 0.00 ([0-9.]+) ([0-9.]+)"`).FindSubmatch(doc)
	require.NotNil(t, m)
	w, _ := strconv.ParseFloat(string(m[1]), 64)
	h, _ := strconv.ParseFloat(string(m[2]), 64)
	assert.Equal(t, image.Pt(int(math.Ceil(w*PNGScale)), int(math.Ceil(h*PNGScale))), img.Bounds().Size())
}

// pixelMap maps a box of the layout (points, y up) to the PNG's pixels through the transform
// Graphviz put on the SVG's graph group (it flips y and adds its pad).
func pixelMap(t *testing.T, doc []byte) func(Box) image.Rectangle {
	t.Helper()
	m := regexp.MustCompile(`class="graph" transform="([^"]*)"`).FindSubmatch(doc)
	require.NotNil(t, m, "no graph group")
	// Graphviz writes "scale(SX SY) rotate(0) translate(TX TY)".
	f := regexp.MustCompile(`scale\(([-0-9.]+) ([-0-9.]+)\) rotate\(0\) translate\(([-0-9.]+) ([-0-9.]+)\)`).FindStringSubmatch(string(m[1]))
	require.NotNil(t, f, "transform %q", m[1])
	var v [4]float64
	for i := range v {
		var err error
		v[i], err = strconv.ParseFloat(f[i+1], 64)
		require.NoError(t, err)
	}
	sx, sy, tx, ty := v[0], v[1], v[2], v[3]
	return func(b Box) image.Rectangle {
		px := func(v float64) int { return int(math.Round(v * comparedScale)) }
		// translate applies first, then scale: a point (x, y) lands at (sx(x+tx), sy(y+ty)).
		return image.Rect(px(sx*(b.X0+tx)), px(sy*(-b.Y1+ty)), px(sx*(b.X1+tx)), px(sy*(-b.Y0+ty)))
	}
}

// darkShare is the share of r's pixels darker than mid-grey over white.
func darkShare(img image.Image, r image.Rectangle) float64 {
	r = r.Intersect(img.Bounds())
	if r.Empty() {
		return 0
	}
	// Both rasterizers' images are RGBA, premultiplied or not; reading them through
	// image.Image's At costs an interface call and a conversion per pixel. Each reader
	// returns the red channel premultiplied by alpha, and alpha.
	var rgba func(x, y int) (uint32, uint32)
	switch m := img.(type) {
	case *image.RGBA:
		rgba = func(x, y int) (uint32, uint32) {
			i := m.PixOffset(x, y)
			return uint32(m.Pix[i]) * 0x101, uint32(m.Pix[i+3]) * 0x101
		}
	case *image.NRGBA:
		rgba = func(x, y int) (uint32, uint32) {
			i := m.PixOffset(x, y)
			a := uint32(m.Pix[i+3]) * 0x101
			return uint32(m.Pix[i]) * 0x101 * a / 0xffff, a
		}
	default:
		rgba = func(x, y int) (uint32, uint32) {
			c, _, _, a := img.At(x, y).RGBA()
			return c, a
		}
	}
	dark := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, a := rgba(x, y)
			// c is premultiplied by a: over white paper, a transparent pixel is paper.
			lum := c + (0xffff - a)
			if lum < 0x8000 {
				dark++
			}
		}
	}
	return float64(dark) / float64(r.Dx()*r.Dy())
}
