package framework

import "testing"

// TestPeakDrained: a map is made anew once an eighth of a large peak is left, and again once empty,
// so that neither the peak's size nor an eighth of it stays held; a small map is left alone.
func TestPeakDrained(t *testing.T) {
	var p Peak
	p.Saw(10000)
	if p.Drained(1251) {
		t.Error("made anew with more than an eighth left")
	}
	if !p.Drained(1250) || p.Most() != 1250 {
		t.Errorf("not made anew at an eighth (peak now %d)", p.Most())
	}
	if p.Drained(200) {
		t.Error("made anew again with more than an eighth of the new peak left")
	}
	if !p.Drained(0) || p.Most() != 0 {
		t.Error("the remade map not made anew once empty")
	}
	var small Peak
	small.Saw(100)
	if small.Drained(0) {
		t.Error("a map of 100 made anew")
	}
}
