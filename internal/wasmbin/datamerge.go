package wasmbin

import (
	"encoding/binary"
	"errors"
	"slices"
)

// MergeGap is the widest run of zero bytes between two data segments that
// MergeDataSegments fills in to join them. wazero keeps about 130 bytes per
// segment (the decoded segment, its offset expression and its Init slice, and a
// per-instance slot), so joining across a gap of up to 128 zero bytes never costs
// more than it saves.
const MergeGap = 128

// MergeDataSegments returns wasm with its active data segments joined where they
// are at most MergeGap bytes apart, or wasm itself when it cannot prove the result
// equivalent.
//
// The Go wasm linker splits its data at every short run of zeros: a first-party
// module has ≈ 38,600 segments carrying ≈ 0.95 MB, and wazero holds each segment
// as its own struct, offset expression and slice for the life of the compiled
// module plus one slot per instance (≈ 4 MB per module, ≈ 28 MB for seven of them).
// Joined, the same bytes sit in about a dozen segments. The runtime joins them
// before compiling; tools-wasm/gen packs the first-party modules already joined,
// so at run time the pass only checks them.
//
// The rewrite is only done when it cannot be observed: the module has no data
// count section (so no memory.init or data.drop can name a segment by index),
// every segment is active on memory 0 at an i32.const offset, and no two segments
// overlap (so the order they are written in does not matter and a filled gap holds
// no other segment's bytes; fresh linear memory is zero). Anything else — an
// unexpected encoding included — leaves the module unchanged for wazero to
// validate as usual.
func MergeDataSegments(wasm []byte) []byte {
	out, err := rewriteDataSection(wasm)
	if err != nil || out == nil {
		return wasm
	}
	return out
}

type dataSeg struct {
	off  uint32
	init []byte
}

var errNotMergeable = errors.New("data section not mergeable")

func rewriteDataSection(wasm []byte) ([]byte, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errNotMergeable
	}
	var dataStart, dataEnd int // the whole section: id, size and payload
	var payload []byte
	for i := 8; i < len(wasm); {
		id := wasm[i]
		n, k := binary.Uvarint(wasm[i+1:])
		if k <= 0 || n > uint64(len(wasm)-i-1-k) {
			return nil, errNotMergeable
		}
		body := wasm[i+1+k : i+1+k+int(n)]
		switch id {
		case 12: // data count: segment indices may be referenced
			return nil, errNotMergeable
		case 11:
			if payload != nil {
				return nil, errNotMergeable
			}
			dataStart, dataEnd, payload = i, i+1+k+int(n), body
		}
		i += 1 + k + int(n)
	}
	if payload == nil {
		return nil, nil
	}
	segs, err := parseDataSegments(payload)
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(segs)
	slices.SortStableFunc(sorted, func(a, b dataSeg) int {
		return int(int64(a.off) - int64(b.off))
	})
	for i := 1; i < len(sorted); i++ {
		if uint64(sorted[i-1].off)+uint64(len(sorted[i-1].init)) > uint64(sorted[i].off) {
			return nil, errNotMergeable // overlapping writes: order matters
		}
	}
	var merged []dataSeg
	for _, s := range sorted {
		if len(merged) > 0 {
			last := &merged[len(merged)-1]
			end := uint64(last.off) + uint64(len(last.init))
			if gap := uint64(s.off) - end; gap <= MergeGap {
				last.init = append(last.init, make([]byte, gap)...)
				last.init = append(last.init, s.init...)
				continue
			}
		}
		// Clipped: the first append to it copies, so wasm is never written.
		merged = append(merged, dataSeg{off: s.off, init: slices.Clip(s.init)})
	}
	if len(merged) == len(segs) {
		return nil, nil
	}
	var sec []byte
	sec = binary.AppendUvarint(sec, uint64(len(merged)))
	for _, s := range merged {
		sec = append(sec, 0x00, 0x41) // active, memory 0; i32.const
		sec = appendSLEB32(sec, int32(s.off))
		sec = append(sec, 0x0b) // end
		sec = binary.AppendUvarint(sec, uint64(len(s.init)))
		sec = append(sec, s.init...)
	}
	out := make([]byte, 0, len(wasm)-(dataEnd-dataStart)+len(sec)+6)
	out = append(out, wasm[:dataStart]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(sec)))
	out = append(out, sec...)
	out = append(out, wasm[dataEnd:]...)
	return out, nil
}

// parseDataSegments reads a data section payload whose segments are all active on
// memory 0 at an i32.const offset.
func parseDataSegments(p []byte) ([]dataSeg, error) {
	count, k := binary.Uvarint(p)
	if k <= 0 || count > uint64(len(p)) {
		return nil, errNotMergeable
	}
	p = p[k:]
	segs := make([]dataSeg, 0, count)
	for range count {
		if len(p) < 2 || p[0] != 0x00 || p[1] != 0x41 {
			return nil, errNotMergeable
		}
		off, k := readSLEB32(p[2:])
		if k <= 0 || off < 0 || len(p) < 2+k+1 || p[2+k] != 0x0b {
			return nil, errNotMergeable
		}
		p = p[2+k+1:]
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, errNotMergeable
		}
		segs = append(segs, dataSeg{off: uint32(off), init: p[k : k+int(n)]})
		p = p[k+int(n):]
	}
	if len(p) != 0 {
		return nil, errNotMergeable
	}
	return segs, nil
}

// readSLEB32 decodes a signed LEB128 of at most 5 bytes; k ≤ 0 on error.
func readSLEB32(p []byte) (int32, int) {
	var r int64
	var shift uint
	for i := 0; i < 5 && i < len(p); i++ {
		b := p[i]
		r |= int64(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				r |= -1 << shift
			}
			if r < -1<<31 || r > 1<<31-1 {
				return 0, -1
			}
			return int32(r), i + 1
		}
	}
	return 0, -1
}

func appendSLEB32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
