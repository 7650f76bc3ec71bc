package raster

import (
	"fmt"
	"image/color"
	"sync"

	"github.com/fogleman/gg"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// The Go fonts stand in for Graphviz's "Helvetica,sans-Serif": they are embedded in
// golang.org/x/image, so the PNG looks the same on every machine and needs no system font.
// Graphviz placed each text by its own Helvetica metrics; the Go fonts' widths differ by a few
// percent, so a start-anchored text can run a little past where Graphviz ended it, never
// into the next label at the spacing the diagrams use (the layout test checks the spacing).
var fonts = sync.OnceValues(func() ([2]*opentype.Font, error) {
	var out [2]*opentype.Font
	for i, ttf := range [][]byte{goregular.TTF, gobold.TTF} {
		f, err := opentype.Parse(ttf)
		if err != nil {
			return out, fmt.Errorf("diagrams/svg/raster: parse the embedded Go font: %w", err)
		}
		out[i] = f
	}
	return out, nil
})

type faceKey struct {
	bold bool
	size float64
}

var (
	facesMu sync.Mutex
	faces   = map[faceKey]font.Face{}
)

func face(bold bool, size float64) (font.Face, *sfnt.Font, error) {
	fs, err := fonts()
	if err != nil {
		return nil, nil, err
	}
	f := fs[0]
	if bold {
		f = fs[1]
	}
	facesMu.Lock()
	defer facesMu.Unlock()
	k := faceKey{bold, size}
	if fc, ok := faces[k]; ok {
		return fc, f, nil
	}
	fc, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		return nil, nil, fmt.Errorf("diagrams/svg/raster: font face: %w", err)
	}
	faces[k] = fc
	return fc, f, nil
}

// drawnRunes are the runes the Go fonts lack that the diagrams' labels use, drawn as strokes
// instead of the font's empty box. TestEveryLabelRuneIsDrawable keeps a new label from
// bringing a rune that is neither.
var drawnRunes = map[rune]func(dc *gg.Context, x, baseline, size, advance float64){
	'⇒': drawDoubleArrow,
}

// hasGlyph reports whether the Go fonts draw r themselves.
func hasGlyph(r rune) (bool, error) {
	fs, err := fonts()
	if err != nil {
		return false, err
	}
	var buf sfnt.Buffer
	i, err := fs[0].GlyphIndex(&buf, r)
	return err == nil && i != 0, nil
}

// drawText draws s with its left, middle or right (anchor 0, 0.5, 1) at x and its baseline at
// y, in pixels.
func drawText(dc *gg.Context, s string, x, y, size float64, bold bool, anchor float64, c color.Color) {
	fc, f, err := face(bold, size)
	if err != nil {
		// The fonts are compiled in; failing to parse them is a build defect the tests see.
		panic(err)
	}
	var buf sfnt.Buffer
	type run struct {
		text  string
		drawn func(dc *gg.Context, x, baseline, size, advance float64)
		width float64
	}
	var runs []run
	fallbackAdvance := font.MeasureString(fc, "→")
	for _, r := range s {
		if d, ok := drawnRunes[r]; ok {
			if i, err := f.GlyphIndex(&buf, r); err != nil || i == 0 {
				runs = append(runs, run{drawn: d, width: fixedToFloat(fallbackAdvance)})
				continue
			}
		}
		if n := len(runs); n > 0 && runs[n-1].drawn == nil {
			runs[n-1].text += string(r)
		} else {
			runs = append(runs, run{text: string(r)})
		}
	}
	total := 0.0
	for i := range runs {
		if runs[i].drawn == nil {
			runs[i].width = fixedToFloat(font.MeasureString(fc, runs[i].text))
		}
		total += runs[i].width
	}
	pen := x - anchor*total
	dc.SetColor(c)
	dc.SetFontFace(fc)
	for _, r := range runs {
		if r.drawn != nil {
			r.drawn(dc, pen, y, size, r.width)
		} else {
			dc.DrawString(r.text, pen, y)
		}
		pen += r.width
	}
}

func fixedToFloat(v fixed.Int26_6) float64 { return float64(v) / 64 }

// drawDoubleArrow draws ⇒ in the box of an advance-wide glyph on the baseline: two strokes at
// the height of the font's arrow and a head closing them.
func drawDoubleArrow(dc *gg.Context, x, baseline, size, advance float64) {
	mid := baseline - 0.32*size
	gap := 0.09 * size
	left, right := x+0.08*advance, x+0.92*advance
	head := 0.28 * size
	dc.SetLineWidth(0.07 * size)
	dc.NewSubPath()
	dc.MoveTo(left, mid-gap)
	dc.LineTo(right-head*0.55, mid-gap)
	dc.MoveTo(left, mid+gap)
	dc.LineTo(right-head*0.55, mid+gap)
	dc.MoveTo(right-head, mid-head)
	dc.LineTo(right, mid)
	dc.LineTo(right-head, mid+head)
	dc.Stroke()
}
