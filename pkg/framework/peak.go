package framework

import "maps"

// shrinkAfter is the peak beyond which a map mostly drained is made anew.
const shrinkAfter = 1024

// Peak follows the most entries a map has held since it was made. A Go map keeps the memory of its
// peak when emptied, and an initial sync fills the syncer's bookkeeping maps with every object: once
// such a map holds at most an eighth of a peak beyond 1,024 entries, or none after more than 128,
// Drained says to make it anew (Remade).
type Peak struct{ n int }

// Saw records that the map holds n entries.
func (p *Peak) Saw(n int) { p.n = max(p.n, n) }

// Drained tells whether a map now holding n entries should be made anew; if so, the peak starts
// again from n.
func (p *Peak) Drained(n int) bool {
	emptied := n == 0 && p.n > shrinkAfter/8
	if !emptied && (p.n <= shrinkAfter || n > p.n/8) {
		return false
	}
	p.n = n
	return true
}

// Remade is a copy of m in a map of its own size.
func Remade[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	maps.Copy(c, m)
	return c
}

// Most is the peak: the most entries seen since the map was last made anew.
func (p *Peak) Most() int { return p.n }
