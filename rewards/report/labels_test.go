package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func TestLabelGroupsMergeIdenticalPoints(t *testing.T) {
	pts := plotter.XYs{{X: 0.279, Y: 0.861}, {X: 0.279, Y: 0.861}, {X: 0.2794, Y: 0.8611}, {X: 0.224, Y: 0.729}}
	first, labels := LabelGroups(pts, []string{"λ=0", "λ=0.25", "λ=0.5", "λ=4"})
	assert.Equal(t, []int{0, 3}, first)
	assert.Equal(t, []string{"λ=0, 0.25, 0.5", "λ=4"}, labels)
}

func TestPlaceLabelsNeverOverlap(t *testing.T) {
	area := vg.Rectangle{Max: vg.Point{X: 300, Y: 300}}
	// Six labels anchored at one point and two near it.
	anchors := []vg.Point{{X: 150, Y: 150}, {X: 150, Y: 150}, {X: 150, Y: 150}, {X: 152, Y: 149}, {X: 150, Y: 150}, {X: 155, Y: 152}}
	boxes := PlaceLabels(area, func(i int) vg.Point { return anchors[i] }, func(int) (vg.Length, vg.Length) { return 60, 10 }, len(anchors))
	for i := range boxes {
		for j := range i {
			assert.False(t, overlaps(boxes[i], boxes[j]), "label %d overprints label %d", i, j)
		}
	}
	// Near the right edge a label goes left of its point.
	b := PlaceLabels(area, func(int) vg.Point { return vg.Point{X: 290, Y: 100} }, func(int) (vg.Length, vg.Length) { return 60, 10 }, 1)
	assert.LessOrEqual(t, b[0].Max.X, area.Max.X)
}
