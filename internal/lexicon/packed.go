package lexicon

import (
	"bytes"
	"fmt"
	"iter"
	"math"
)

// The decoded table is the largest thing recall keeps in memory, and a server
// keeps it for its whole life. Its offsets and ids are therefore packed:
// offsets as one uint32 per block of offBlock entries plus a uint16 from it per
// entry (2.1 bytes an entry instead of 4), ids in three bytes (every id of
// WordNet 3.0 is below 2^24; the largest, a relation's target<<2|kind, is
// below 2^19). 7.09 MiB unpacked, 5.11 MiB packed (BenchmarkLoadRetained).

// offShift sets offBlock = 32 entries per base: a block of 32 lemmas or lists
// spans at most a few thousand bytes or ids, far below the uint16 a delta holds.
const offShift = 5

// offsets is a non-decreasing sequence of uint32 (the n+1 bounds of n entries).
type offsets struct {
	base  []uint32 // the value at entry i<<offShift
	delta []uint16 // value i − base[i>>offShift]
}

func newOffsets(n int) offsets {
	return offsets{base: make([]uint32, 0, n>>offShift+1), delta: make([]uint16, 0, n)}
}

// push appends v; a v below the last value, or too far from its block's base
// for a uint16, is an error.
func (o *offsets) push(v uint32) error {
	i := len(o.delta)
	if i > 0 && v < o.at(uint32(i-1)) {
		return fmt.Errorf("offset %d at entry %d is below the one before it", v, i)
	}
	if i&(1<<offShift-1) == 0 {
		o.base = append(o.base, v)
	}
	b := o.base[i>>offShift]
	if v-b > math.MaxUint16 {
		return fmt.Errorf("offset %d at entry %d does not fit its block (base %d)", v, i, b)
	}
	o.delta = append(o.delta, uint16(v-b))
	return nil
}

// at returns value i.
func (o *offsets) at(i uint32) uint32 { return o.base[i>>offShift] + uint32(o.delta[i]) }

// entries returns how many entries the bounds delimit (values − 1).
func (o *offsets) entries() int { return max(len(o.delta)-1, 0) }

// maxID bounds what ids can hold.
const maxID = 1<<24 - 1

// ids is a sequence of ids below 2^24, three bytes each (little-endian).
type ids []byte

func (d *ids) push(v uint32) { *d = append(*d, byte(v), byte(v>>8), byte(v>>16)) }

func (d ids) at(k uint32) uint32 {
	k *= 3
	return uint32(d[k]) | uint32(d[k+1])<<8 | uint32(d[k+2])<<16
}

func (d ids) count() uint32 { return uint32(len(d) / 3) }

// lists holds one list of ids per entry: entry i is ids[off.at(i):off.at(i+1)].
type lists struct {
	off offsets
	ids ids
}

func newLists(n int) lists {
	l := lists{off: newOffsets(n + 1)}
	_ = l.off.push(0)
	return l
}

// end closes the list of the next entry.
func (l *lists) end() error { return l.off.push(l.ids.count()) }

// clip drops the spare capacity appending left behind.
func (l *lists) clip() { l.ids = bytes.Clone(l.ids) }

// of yields the ids of entry i in order.
func (l *lists) of(i uint32) iter.Seq[uint32] {
	lo, hi := l.off.at(i), l.off.at(i+1)
	return func(yield func(uint32) bool) {
		for k := lo; k < hi; k++ {
			if !yield(l.ids.at(k)) {
				return
			}
		}
	}
}

// span returns the bounds of entry i in ids: a loop over them allocates
// nothing where a loop over of, nested in another, would.
func (l *lists) span(i uint32) (lo, hi uint32) { return l.off.at(i), l.off.at(i + 1) }

// len returns how many ids entry i holds.
func (l *lists) len(i uint32) int { return int(l.off.at(i+1) - l.off.at(i)) }
