package svg

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-graphviz"
)

// Box is an axis-aligned rectangle in Graphviz's points, y growing upwards as in its layout.
type Box struct{ X0, Y0, X1, Y1 float64 }

// Overlaps reports whether two boxes share more than a touching edge.
func (b Box) Overlaps(o Box) bool {
	return b.X0 < o.X1 && o.X0 < b.X1 && b.Y0 < o.Y1 && o.Y0 < b.Y1
}

func (b Box) union(o Box) Box {
	return Box{min(b.X0, o.X0), min(b.Y0, o.Y0), max(b.X1, o.X1), max(b.Y1, o.Y1)}
}

func (b Box) String() string {
	return fmt.Sprintf("[%.0f,%.0f–%.0f,%.0f]", b.X0, b.Y0, b.X1, b.Y1)
}

// Placed is something the layout put somewhere: a node, or the whole label of an edge (all its
// lines: a label is one block on the page, so two labels overlap where their blocks do).
type Placed struct {
	Name string // a node's name, or "From -> To" for an edge's label
	Box  Box
}

// Layout is where Graphviz's dot engine puts the nodes and edge labels of a DOT graph, read from
// its JSON output: the same layout its SVG draws.
type Layout struct {
	Nodes  []Placed
	Labels []Placed
}

// LayOut lays src out as SVG does and returns where its nodes and edge labels went.
func LayOut(ctx context.Context, src []byte) (Layout, error) {
	out, err := renderDOT(ctx, src, graphviz.Format("json"))
	if err != nil {
		return Layout{}, err
	}
	var g struct {
		Objects []struct {
			Name  string   `json:"name"`
			Pos   string   `json:"pos"`
			Width string   `json:"width"`
			H     string   `json:"height"`
			Draw  []drawOp `json:"_draw_"`
		} `json:"objects"`
		Edges []struct {
			Tail  int      `json:"tail"`
			Head  int      `json:"head"`
			LDraw []drawOp `json:"_ldraw_"`
		} `json:"edges"`
	}
	if err := json.Unmarshal(out, &g); err != nil {
		return Layout{}, fmt.Errorf("diagrams/svg: read Graphviz's layout: %w", err)
	}
	var l Layout
	for _, o := range g.Objects {
		b, err := nodeBox(o.Pos, o.Width, o.H)
		if err != nil {
			return Layout{}, fmt.Errorf("diagrams/svg: node %s: %w", o.Name, err)
		}
		l.Nodes = append(l.Nodes, Placed{Name: o.Name, Box: b})
	}
	for _, e := range g.Edges {
		b, ok := textBox(e.LDraw)
		if !ok {
			continue // an edge without a label
		}
		if e.Tail >= len(g.Objects) || e.Head >= len(g.Objects) {
			return Layout{}, fmt.Errorf("diagrams/svg: an edge names node %d or %d of %d", e.Tail, e.Head, len(g.Objects))
		}
		name := g.Objects[e.Tail].Name + " -> " + g.Objects[e.Head].Name
		l.Labels = append(l.Labels, Placed{Name: name, Box: b})
	}
	return l, nil
}

// Overlaps lists every pair of labels, and every label and node, whose boxes overlap.
func (l Layout) Overlaps() []string {
	var out []string
	for i, a := range l.Labels {
		for _, b := range l.Labels[i+1:] {
			if a.Box.Overlaps(b.Box) {
				out = append(out, fmt.Sprintf("label of %s %v overlaps label of %s %v", a.Name, a.Box, b.Name, b.Box))
			}
		}
		for _, n := range l.Nodes {
			if a.Box.Overlaps(n.Box) {
				out = append(out, fmt.Sprintf("label of %s %v overlaps node %s %v", a.Name, a.Box, n.Name, n.Box))
			}
		}
	}
	return out
}

type drawOp struct {
	Op    string     `json:"op"`
	Size  float64    `json:"size"`
	Pt    [2]float64 `json:"pt"`
	Align string     `json:"align"`
	Width float64    `json:"width"`
}

// textBox is the block of an xdot label: every text operation's extent, from a descender
// below its baseline to the font size above it (the height Graphviz gives a line).
func textBox(ops []drawOp) (Box, bool) {
	var b Box
	found := false
	size := 14.0 // Graphviz's default font size, until an F operation sets it
	for _, op := range ops {
		switch op.Op {
		case "F":
			size = op.Size
		case "T":
			x0 := op.Pt[0]
			switch op.Align {
			case "c":
				x0 -= op.Width / 2
			case "r":
				x0 -= op.Width
			}
			t := Box{x0, op.Pt[1] - 0.25*size, x0 + op.Width, op.Pt[1] + 0.9*size}
			if found {
				b = b.union(t)
			} else {
				b, found = t, true
			}
		}
	}
	return b, found
}

// nodeBox is a node's extent from its centre and its size in inches.
func nodeBox(pos, width, height string) (Box, error) {
	x, y, ok := strings.Cut(pos, ",")
	if !ok {
		return Box{}, fmt.Errorf("pos %q", pos)
	}
	var v [4]float64
	for i, s := range []string{x, y, width, height} {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Box{}, fmt.Errorf("%q is not a number", s)
		}
		v[i] = f
	}
	w, h := v[2]*72/2, v[3]*72/2
	return Box{v[0] - w, v[1] - h, v[0] + w, v[1] + h}, nil
}
