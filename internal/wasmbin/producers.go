package wasmbin

import (
	"bytes"
	"fmt"
)

// ProducersSection is the custom section in which toolchains record what
// built a module (the tool-conventions "producers" section).
const ProducersSection = "producers"

// maxProducersBytes bounds the producers section this package decodes: real
// ones are tens of bytes; a larger one is reported, not decoded.
const maxProducersBytes = 4 << 10

// Producer is one entry of a producers field: a name and its version ("" when
// the toolchain gave none).
type Producer struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Producers is a decoded producers section: the module's own claim of the
// languages it was written in, the tools that processed it and the SDKs it
// used. Nothing verifies it.
type Producers struct {
	Language    []Producer `json:"language,omitempty"`
	ProcessedBy []Producer `json:"processed_by,omitempty"`
	SDK         []Producer `json:"sdk,omitempty"`
}

// ParseProducers decodes a producers section payload:
// vec(field-name vec(name version)) with field names language, processed-by and
// sdk (others are skipped). It refuses payloads over 4 KiB and malformed ones,
// naming the byte offset within the payload.
func ParseProducers(payload []byte) (*Producers, error) {
	if len(payload) > maxProducersBytes {
		return nil, fmt.Errorf("%w: producers section of %d bytes (at most %d are read)", ErrInvalid, len(payload), maxProducersBytes)
	}
	r := &reader{b: payload, end: len(payload)}
	nFields, err := r.count("producers field", 2)
	if err != nil {
		return nil, err
	}
	var p Producers
	for range nFields {
		field, err := r.name("producers field name")
		if err != nil {
			return nil, err
		}
		n, err := r.count("producers value", 2)
		if err != nil {
			return nil, err
		}
		var vals []Producer
		for range n {
			name, err := r.name("producer name")
			if err != nil {
				return nil, err
			}
			version, err := r.name("producer version")
			if err != nil {
				return nil, err
			}
			vals = append(vals, Producer{Name: name, Version: version})
		}
		switch field {
		case "language":
			p.Language = append(p.Language, vals...)
		case "processed-by":
			p.ProcessedBy = append(p.ProcessedBy, vals...)
		case "sdk":
			p.SDK = append(p.SDK, vals...)
		}
	}
	if r.pos != r.end {
		return nil, r.errf("%d bytes after the producers fields", r.end-r.pos)
	}
	return &p, nil
}

// AppendProducers encodes p as a producers section payload (tests, and tools
// that add the section a toolchain left out).
func AppendProducers(b []byte, p Producers) []byte {
	str := func(b []byte, s string) []byte {
		b = AppendULEB(b, uint64(len(s)))
		return append(b, s...)
	}
	fields := []struct {
		name string
		vals []Producer
	}{{"language", p.Language}, {"processed-by", p.ProcessedBy}, {"sdk", p.SDK}}
	n := 0
	for _, f := range fields {
		if len(f.vals) > 0 {
			n++
		}
	}
	b = AppendULEB(b, uint64(n))
	for _, f := range fields {
		if len(f.vals) == 0 {
			continue
		}
		b = str(b, f.name)
		b = AppendULEB(b, uint64(len(f.vals)))
		for _, v := range f.vals {
			b = str(str(b, v.Name), v.Version)
		}
	}
	return b
}

// InferToolchain names the toolchain a module without a producers section
// points to, from marks its compiler leaves in the module's bytes, and the mark
// it found; "" when none is recognised. It is a guess for reviewers, not proof:
// AssemblyScript's runtime keeps its "~lib/" source paths as UTF-16 strings;
// Rust's standard library keeps "library/core/src/" panic locations.
func InferToolchain(mod []byte) (toolchain, evidence string) {
	switch {
	case bytes.Contains(mod, utf16LE("~lib/rt/")) || bytes.Contains(mod, utf16LE("~lib/array.ts")):
		return "AssemblyScript", `"~lib/" runtime source paths (UTF-16) in its data`
	case bytes.Contains(mod, []byte("library/core/src/")) || bytes.Contains(mod, []byte("library/alloc/src/")):
		return "Rust", `Rust standard library paths ("library/core/src/…") in its data`
	}
	return "", ""
}

func utf16LE(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, s[i], 0)
	}
	return b
}
