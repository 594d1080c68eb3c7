package mail

import (
	"encoding/binary"
	"errors"

	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The threader's spill file holds one record per message: length-prefixed strings
// and varints, in the order appendSpillRec writes them. It lives for one run only
// (an unlinked temporary file), so the format needs no version.

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

// appendSpillRec appends the encoding of r to b.
func appendSpillRec(b []byte, r *spillRec) []byte {
	m := &r.msg
	b = appendStr(b, r.firstRef)
	b = appendStr(b, r.prov)
	b = appendStr(b, r.origin)
	b = appendStr(b, m.Ref)
	b = appendStr(b, m.Author)
	b = appendStr(b, m.AuthorAddr)
	b = appendStrs(b, m.To)
	b = appendStrs(b, m.Cc)
	b = appendStr(b, m.Subject)
	b = binary.AppendVarint(b, m.TimestampMS)
	b = appendStr(b, m.Text)
	b = binary.AppendUvarint(b, uint64(len(m.Attachments)))
	for _, a := range m.Attachments {
		b = appendStr(b, a.Name)
		b = appendStr(b, a.ContentType)
		b = binary.AppendVarint(b, int64(a.Size))
	}
	return appendStr(b, m.ReplyTo)
}

var errSpillRec = errors.New("truncated or damaged record")

// spillDec reads a record; the first error sticks.
type spillDec struct {
	b   []byte
	err error
}

func (d *spillDec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errSpillRec
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *spillDec) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errSpillRec
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *spillDec) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errSpillRec
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *spillDec) strs() []string {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errSpillRec
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

// decodeSpillRec decodes a record written by appendSpillRec.
func decodeSpillRec(b []byte) (*spillRec, error) {
	d := &spillDec{b: b}
	r := &spillRec{}
	r.firstRef = d.str()
	r.prov = d.str()
	r.origin = d.str()
	m := &r.msg
	m.Ref = d.str()
	m.Author = d.str()
	m.AuthorAddr = d.str()
	m.To = d.strs()
	m.Cc = d.strs()
	m.Subject = d.str()
	m.TimestampMS = d.varint()
	m.Text = d.str()
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(d.b)) {
			return nil, errSpillRec
		}
		m.Attachments = make([]abi.Attachment, n)
		for i := range m.Attachments {
			a := &m.Attachments[i]
			a.Name = d.str()
			a.ContentType = d.str()
			a.Size = int(d.varint())
		}
	}
	m.ReplyTo = d.str()
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, errSpillRec
	}
	return r, nil
}
