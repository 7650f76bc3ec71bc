// Package raster draws the SVG that Graphviz writes as pixels, with its own small rasterizer
// and the Go fonts: no Graphviz, no wasm. It is apart from package svg, which lays the diagrams
// out with Graphviz, so that a program drawing an SVG it already has (rewatch diagram, from the
// committed layout) links no Graphviz.
package raster

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/fogleman/gg"
)

// PNGScale is how many pixels of a PNG stand for one point of the SVG: twice, so the
// labels stay sharp on the high-density screens documentation is read on.
const PNGScale = 2

// PNG is an SVG that Graphviz wrote, drawn by Rasterize at PNGScale and encoded as a PNG.
func PNG(svgDoc []byte) ([]byte, error) {
	img, err := Rasterize(svgDoc, PNGScale)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("diagrams/svg/raster: encode PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// Rasterize draws an SVG that Graphviz wrote as an RGBA image, scale pixels to the SVG's user
// unit (Graphviz's point). It reads the part of SVG that Graphviz's svg renderer writes —
// groups with a scale/translate transform, path (M, L, C, Z), polygon, polyline, ellipse and
// text — and fails on any other element that draws, so a Graphviz upgrade that starts writing
// something new fails a test instead of drawing a picture with parts missing.
//
// It exists because go-graphviz's own PNG renderer fills every B-spline (so every edge came out
// as a black area), lost the Mrecord nodes and had no glyph for ⇒; a picture put into
// someone's documentation has to show what the SVG shows. diagrams/svg's tests hold it to
// rsvg-convert's rendering of the same SVG.
func Rasterize(svgDoc []byte, scale float64) (image.Image, error) {
	if scale <= 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("diagrams/svg/raster: scale %v is not a positive number", scale)
	}
	dec := xml.NewDecoder(bytes.NewReader(svgDoc))
	// Graphviz's SVG names the SVG 1.1 DTD; the entity-free document needs nothing from it.
	dec.Strict = true
	r := &rasterizer{scale: scale}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("diagrams/svg/raster: read SVG: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := r.start(dec, t); err != nil {
				return nil, err
			}
		case xml.EndElement:
			if t.Name.Local == "g" && len(r.groups) > 0 {
				r.groups = r.groups[:len(r.groups)-1]
			}
		}
	}
	if r.dc == nil {
		return nil, errors.New("diagrams/svg/raster: no <svg> element")
	}
	return r.dc.Image(), nil
}

// rasterizer keeps the canvas and the stack of group transforms. Graphviz nests one group
// with a transform (the graph) and plain groups (nodes, edges) inside it, so a transform is a
// scale then a translation, composed down the stack.
type rasterizer struct {
	scale  float64
	dc     *gg.Context
	view   [4]float64 // the viewBox: min x, min y, width, height
	groups []transform
}

type transform struct{ sx, sy, tx, ty float64 }

func (t transform) then(inner transform) transform {
	return transform{
		sx: t.sx * inner.sx, sy: t.sy * inner.sy,
		tx: t.tx + t.sx*inner.tx, ty: t.ty + t.sy*inner.ty,
	}
}

// point maps a point in the current group's coordinates to the image's pixels.
func (r *rasterizer) point(x, y float64) (float64, float64) {
	t := transform{sx: 1, sy: 1}
	if n := len(r.groups); n > 0 {
		t = r.groups[n-1]
	}
	x, y = t.sx*x+t.tx, t.sy*y+t.ty
	return (x - r.view[0]) * r.scale, (y - r.view[1]) * r.scale
}

// length maps a length (a stroke width, a radius, a font size) to pixels.
func (r *rasterizer) length(l float64) float64 {
	t := transform{sx: 1, sy: 1}
	if n := len(r.groups); n > 0 {
		t = r.groups[n-1]
	}
	return l * t.sx * r.scale
}

func (r *rasterizer) start(dec *xml.Decoder, el xml.StartElement) error {
	a := attrs(el)
	if el.Name.Local != "svg" && r.dc == nil {
		return fmt.Errorf("diagrams/svg/raster: <%s> before <svg>", el.Name.Local)
	}
	switch el.Name.Local {
	case "svg":
		return r.canvas(a)
	case "g":
		return r.group(a)
	case "title", "desc", "metadata", "defs":
		return dec.Skip() // nothing drawn
	case "a":
		return nil // Graphviz wraps URL'd elements in <a>; what is inside is drawn
	case "polygon", "polyline":
		pts, err := numbers(a["points"])
		if err != nil || len(pts) < 4 || len(pts)%2 != 0 {
			return fmt.Errorf("diagrams/svg/raster: <%s points=%q>: want pairs of numbers", el.Name.Local, a["points"])
		}
		r.dc.NewSubPath()
		for i := 0; i < len(pts); i += 2 {
			r.dc.LineTo(r.point(pts[i], pts[i+1]))
		}
		if el.Name.Local == "polygon" {
			r.dc.ClosePath()
		}
		return r.paint(a)
	case "path":
		if err := r.path(a["d"]); err != nil {
			return err
		}
		return r.paint(a)
	case "ellipse":
		v, err := floats(a, "cx", "cy", "rx", "ry")
		if err != nil {
			return err
		}
		x, y := r.point(v[0], v[1])
		r.dc.NewSubPath()
		r.dc.DrawEllipse(x, y, r.length(v[2]), r.length(v[3]))
		return r.paint(a)
	case "text":
		var content string
		if err := dec.DecodeElement(&content, &el); err != nil {
			return fmt.Errorf("diagrams/svg/raster: <text>: %w", err)
		}
		return r.text(a, content)
	}
	return fmt.Errorf("diagrams/svg/raster: <%s> is not an element Graphviz's SVG renderer writes", el.Name.Local)
}

// canvas sizes the image from the viewBox, the drawing's own units.
func (r *rasterizer) canvas(a map[string]string) error {
	v, err := numbers(a["viewBox"])
	if err != nil || len(v) != 4 || v[2] <= 0 || v[3] <= 0 {
		return fmt.Errorf("diagrams/svg/raster: <svg viewBox=%q>: want four numbers and a positive size", a["viewBox"])
	}
	w, h := math.Ceil(v[2]*r.scale), math.Ceil(v[3]*r.scale)
	if w*h > 1<<28 {
		return fmt.Errorf("diagrams/svg/raster: a %v×%v image is too large", w, h)
	}
	copy(r.view[:], v)
	r.dc = gg.NewContext(int(w), int(h))
	return nil
}

func (r *rasterizer) group(a map[string]string) error {
	outer := transform{sx: 1, sy: 1}
	if n := len(r.groups); n > 0 {
		outer = r.groups[n-1]
	}
	t, err := parseTransform(a["transform"])
	if err != nil {
		return err
	}
	r.groups = append(r.groups, outer.then(t))
	return nil
}

// parseTransform reads the transforms Graphviz writes on its graph group:
// "scale(sx sy) rotate(0) translate(tx ty)", applied right to left.
func parseTransform(s string) (transform, error) {
	t := transform{sx: 1, sy: 1}
	rest := strings.TrimSpace(s)
	for rest != "" {
		name, args, ok := strings.Cut(rest, "(")
		if !ok {
			return t, fmt.Errorf("diagrams/svg/raster: transform %q", s)
		}
		args, after, ok := strings.Cut(args, ")")
		if !ok {
			return t, fmt.Errorf("diagrams/svg/raster: transform %q", s)
		}
		rest = strings.TrimSpace(after)
		v, err := numbers(args)
		if err != nil {
			return t, fmt.Errorf("diagrams/svg/raster: transform %q: %w", s, err)
		}
		var step transform
		switch strings.TrimSpace(name) {
		case "scale":
			if len(v) == 1 {
				v = append(v, v[0])
			}
			if len(v) != 2 {
				return t, fmt.Errorf("diagrams/svg/raster: transform %q", s)
			}
			step = transform{sx: v[0], sy: v[1]}
		case "translate":
			if len(v) == 1 {
				v = append(v, 0)
			}
			if len(v) != 2 {
				return t, fmt.Errorf("diagrams/svg/raster: transform %q", s)
			}
			step = transform{sx: 1, sy: 1, tx: v[0], ty: v[1]}
		case "rotate":
			if len(v) < 1 || v[0] != 0 {
				return t, fmt.Errorf("diagrams/svg/raster: transform %q: only rotate(0), as Graphviz writes it, is drawn", s)
			}
			continue
		default:
			return t, fmt.Errorf("diagrams/svg/raster: transform %q", s)
		}
		t = t.then(step)
	}
	return t, nil
}

// path reads Graphviz's path data: absolute M, L, C and Z, a command letter followed by one
// or more coordinate groups.
func (r *rasterizer) path(d string) error {
	r.dc.NewSubPath()
	cmd := byte(0)
	var args []float64
	flush := func() error {
		if cmd == 0 {
			return nil
		}
		arity := map[byte]int{'M': 2, 'L': 2, 'C': 6, 'Z': 0}[cmd]
		if arity == 0 {
			if len(args) != 0 {
				return fmt.Errorf("diagrams/svg/raster: path %q: Z takes no numbers", d)
			}
			r.dc.ClosePath()
			return nil
		}
		if len(args) == 0 || len(args)%arity != 0 {
			return fmt.Errorf("diagrams/svg/raster: path %q: %c wants groups of %d numbers", d, cmd, arity)
		}
		for i := 0; i < len(args); i += arity {
			p := args[i : i+arity]
			switch {
			case cmd == 'M' && i == 0:
				r.dc.MoveTo(r.point(p[0], p[1]))
			case cmd == 'M' || cmd == 'L':
				r.dc.LineTo(r.point(p[0], p[1]))
			case cmd == 'C':
				x1, y1 := r.point(p[0], p[1])
				x2, y2 := r.point(p[2], p[3])
				x3, y3 := r.point(p[4], p[5])
				r.dc.CubicTo(x1, y1, x2, y2, x3, y3)
			}
		}
		return nil
	}
	start := 0
	for i := 0; i <= len(d); i++ {
		if i < len(d) && !strings.ContainsRune("MLCZmlcz", rune(d[i])) {
			continue
		}
		v, err := numbers(d[start:i])
		if err != nil {
			return fmt.Errorf("diagrams/svg/raster: path %q: %w", d, err)
		}
		args = append(args, v...)
		if err := flush(); err != nil {
			return err
		}
		if i == len(d) {
			break
		}
		if c := d[i]; c >= 'a' {
			return fmt.Errorf("diagrams/svg/raster: path %q: relative command %c is not one Graphviz writes", d, c)
		}
		cmd, args, start = d[i], args[:0], i+1
	}
	if cmd == 0 && strings.TrimSpace(d) != "" {
		return fmt.Errorf("diagrams/svg/raster: path %q has no command", d)
	}
	return nil
}

// paint fills, then strokes, the current path as its attributes say; SVG's defaults are a
// black fill and no stroke.
func (r *rasterizer) paint(a map[string]string) error {
	fill, err := parseColor(a["fill"], color.Black)
	if err != nil {
		return err
	}
	stroke, err := parseColor(a["stroke"], nil)
	if err != nil {
		return err
	}
	width := 1.0
	if w, ok := a["stroke-width"]; ok {
		if width, err = strconv.ParseFloat(w, 64); err != nil || width < 0 {
			return fmt.Errorf("diagrams/svg/raster: stroke-width %q", w)
		}
	}
	if fill != nil {
		r.dc.SetColor(fill)
		if stroke != nil {
			r.dc.FillPreserve()
		} else {
			r.dc.Fill()
		}
	}
	if stroke != nil {
		r.dc.SetColor(stroke)
		r.dc.SetLineWidth(r.length(width))
		r.dc.Stroke()
	}
	r.dc.ClearPath()
	return nil
}

func (r *rasterizer) text(a map[string]string, content string) error {
	v, err := floats(a, "x", "y", "font-size")
	if err != nil {
		return err
	}
	fill, err := parseColor(a["fill"], color.Black)
	if err != nil {
		return err
	}
	if fill == nil {
		return nil
	}
	bold := a["font-weight"] == "bold"
	x, y := r.point(v[0], v[1])
	size := r.length(v[2])
	var anchor float64
	switch a["text-anchor"] {
	case "", "start":
	case "middle":
		anchor = 0.5
	case "end":
		anchor = 1
	default:
		return fmt.Errorf("diagrams/svg/raster: text-anchor %q", a["text-anchor"])
	}
	drawText(r.dc, content, x, y, size, bold, anchor, fill)
	return nil
}

func attrs(el xml.StartElement) map[string]string {
	m := make(map[string]string, len(el.Attr))
	for _, a := range el.Attr {
		m[a.Name.Local] = a.Value
	}
	return m
}

func floats(a map[string]string, names ...string) ([]float64, error) {
	out := make([]float64, len(names))
	for i, n := range names {
		f, err := strconv.ParseFloat(a[n], 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("diagrams/svg/raster: attribute %s=%q is not a number", n, a[n])
		}
		out[i] = f
	}
	return out, nil
}

// numbers reads numbers separated by spaces and commas, as SVG writes lists of coordinates.
func numbers(s string) ([]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' })
	out := make([]float64, 0, len(fields))
	for _, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseColor reads the colours Graphviz writes: a name from its small set, #rrggbb, or
// "none"/"transparent" (nil: nothing painted). An absent attribute takes def.
func parseColor(s string, def color.Color) (color.Color, error) {
	switch s {
	case "":
		return def, nil
	case "none", "transparent":
		return nil, nil
	case "black":
		return color.Black, nil
	case "white":
		return color.White, nil
	}
	if len(s) == 7 && s[0] == '#' {
		v, err := strconv.ParseUint(s[1:], 16, 32)
		if err == nil {
			return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}, nil
		}
	}
	return nil, fmt.Errorf("diagrams/svg/raster: colour %q is not one Graphviz writes here", s)
}
