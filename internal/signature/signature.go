// Package signature signs WebAssembly tool modules with ed25519 and verifies those
// signatures, storing them in an "openhuman.signature" custom section that is itself
// excluded from what is signed.
//
// What is signed: the module bytes with every "openhuman.signature" custom section
// removed (so code, data, the manifest section and any other custom section are all
// covered). The ed25519 message is the domain-separation prefix
// "openhuman.signature/1\x00" followed by the 32-byte sha256 of those bytes, so a
// signature over a module can never be replayed as a signature over anything else.
//
// The section payload is a small JSON object:
//
//	{"v":1,"algorithm":"ed25519","key_id":"SHA256:3f9c0a1b2c3d4e5f",
//	 "public_key":"ed25519:<base64>","digest":"sha256:<hex>","signature":"<base64>"}
//
// Trust is decided by the operator's policy ([trust] keys, require_signature), not by
// the module: the embedded public key only says who claims to have signed.
package signature

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// SectionName is the custom section that carries a module's signature.
const SectionName = "openhuman.signature"

// Algorithm is the only signature algorithm this package produces and accepts.
const Algorithm = "ed25519"

// PublicKeyPrefix starts every textual public key ("ed25519:<base64>").
const PublicKeyPrefix = "ed25519:"

// messagePrefix separates module signatures from every other use of a key.
const messagePrefix = "openhuman.signature/1\x00"

// maxPayload bounds the signature section we are willing to parse.
const maxPayload = 4096

// States of a module's signature.
const (
	// StateUnsigned: the module has no openhuman.signature section.
	StateUnsigned = "unsigned"
	// StateValid: the signature verifies against the key it names.
	StateValid = "valid"
	// StateInvalid: a signature section is present but is malformed or does not verify
	// (the module was changed after signing, or the section was forged).
	StateInvalid = "invalid"
)

// Payload is the JSON stored in the openhuman.signature section.
type Payload struct {
	Version   int    `json:"v"`
	Algorithm string `json:"algorithm"`
	KeyID     string `json:"key_id"`
	PublicKey string `json:"public_key"`
	Digest    string `json:"digest"`
	Signature string `json:"signature"`
}

// Status is the outcome of verifying one module's signature.
type Status struct {
	// State is StateUnsigned, StateValid or StateInvalid.
	State string `json:"state"`
	// KeyID is the fingerprint of the key the section names (empty when unsigned or unreadable).
	KeyID string `json:"key_id,omitempty"`
	// PublicKey is the key the section names, as "ed25519:<base64>".
	PublicKey string `json:"public_key,omitempty"`
	// Trusted is true when State is valid and the key is among the trusted keys.
	Trusted bool `json:"trusted"`
	// Digest is "sha256:<hex>" of the signed bytes (the module without its signature section).
	Digest string `json:"digest"`
	// Reason explains an invalid signature.
	Reason string `json:"reason,omitempty"`
}

// String renders the status for people: "unsigned", "signed by key SHA256:… (valid, trusted)",
// "INVALID signature (…)".
func (s *Status) String() string {
	switch s.State {
	case StateUnsigned:
		return "unsigned"
	case StateValid:
		t := "not in the trusted keys"
		if s.Trusted {
			t = "trusted"
		}
		return fmt.Sprintf("signed by key %s (valid, %s)", s.KeyID, t)
	default:
		if s.KeyID != "" {
			return fmt.Sprintf("INVALID signature claiming key %s: %s", s.KeyID, s.Reason)
		}
		return "INVALID signature: " + s.Reason
	}
}

// GenerateKey makes a new ed25519 key pair from rand (crypto/rand.Reader when nil).
func GenerateKey(rand io.Reader) (ed25519.PublicKey, ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	return pub, priv, nil
}

// FormatPublicKey renders a public key as "ed25519:<standard base64>", the form used
// in policy.toml [trust] keys.
func FormatPublicKey(pub ed25519.PublicKey) string {
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// ParsePublicKey reads "ed25519:<base64>" (surrounding space ignored).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, PublicKeyPrefix) {
		return nil, fmt.Errorf("public key %q: want the form \"ed25519:<base64>\" (as printed by `openhuman-core tools keygen`)", abbreviate(t))
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(t, PublicKeyPrefix))
	if err != nil {
		return nil, fmt.Errorf("public key %q: base64: %w", abbreviate(t), err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key %q: %d bytes, an ed25519 public key has %d", abbreviate(t), len(raw), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// ParsePublicKeys parses every key of a policy's [trust] keys list; the error names
// the position of the first bad entry.
func ParsePublicKeys(keys []string) ([]ed25519.PublicKey, error) {
	out := make([]ed25519.PublicKey, 0, len(keys))
	for i, k := range keys {
		pub, err := ParsePublicKey(k)
		if err != nil {
			return nil, fmt.Errorf("trust key %d: %w", i+1, err)
		}
		out = append(out, pub)
	}
	return out, nil
}

// Fingerprint is a short, stable identifier of a public key: "SHA256:" and the first
// 16 hex digits of the sha256 of the raw key bytes.
func Fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "SHA256:" + hex.EncodeToString(sum[:8])
}

// MarshalPrivateKey encodes a private key as a PKCS#8 PEM block ("PRIVATE KEY"),
// readable by openssl. Write it with file mode 0600.
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey reads a PKCS#8 PEM ed25519 private key (as written by
// MarshalPrivateKey or `openssl genpkey -algorithm ed25519`).
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("private key: no PEM block found; want a \"PRIVATE KEY\" file as written by `openhuman-core tools keygen`")
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("private key: PEM block type %q, want \"PRIVATE KEY\" (PKCS#8)", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key: %T is not an ed25519 key", k)
	}
	return priv, nil
}

// Digest returns sha256 of the module without its signature section (the bytes a
// signature covers), or an error when module is not a valid wasm module.
func Digest(module []byte) ([32]byte, error) {
	m, err := wasmbin.Parse(module)
	if err != nil {
		return [32]byte{}, fmt.Errorf("read module for signing: %w", err)
	}
	return digestParsed(module, m), nil
}

// digestParsed hashes module minus its signature sections without copying it.
func digestParsed(module []byte, m *wasmbin.Module) [32]byte {
	h := sha256.New()
	prev := 0
	for _, cs := range m.CustomSections {
		if cs.Name != SectionName {
			continue
		}
		h.Write(module[prev:cs.Offset])
		prev = cs.End
	}
	h.Write(module[prev:])
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func message(digest [32]byte) []byte {
	return append([]byte(messagePrefix), digest[:]...)
}

// Sign returns a copy of module carrying a signature by priv in an
// openhuman.signature custom section; any earlier signature section is replaced.
// The module's manifest must already be packed: re-packing afterwards breaks the
// signature (pack first, then sign).
func Sign(module []byte, priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	stripped, err := wasmbin.StripCustomSection(module, SectionName)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	digest := sha256.Sum256(stripped)
	pub := priv.Public().(ed25519.PublicKey)
	p := Payload{
		Version:   1,
		Algorithm: Algorithm,
		KeyID:     Fingerprint(pub),
		PublicKey: FormatPublicKey(pub),
		Digest:    "sha256:" + hex.EncodeToString(digest[:]),
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, message(digest))),
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("sign: encode payload: %w", err)
	}
	return wasmbin.AppendCustomSection(stripped, SectionName, payload), nil
}

// Verify checks module's signature section. The returned Status says whether the
// module is unsigned, validly signed (and whether by one of trusted), or carries an
// invalid signature. The error is set only when module is not a valid wasm module
// (it wraps wasmbin.ErrInvalid); a bad signature is a Status, not an error.
func Verify(module []byte, trusted []ed25519.PublicKey) (*Status, error) {
	m, err := wasmbin.Parse(module)
	if err != nil {
		return nil, fmt.Errorf("verify signature: %w", err)
	}
	var sections [][]byte
	for _, cs := range m.CustomSections {
		if cs.Name == SectionName {
			sections = append(sections, cs.Payload)
		}
	}
	digest := digestParsed(module, m)
	st := &Status{State: StateUnsigned, Digest: "sha256:" + hex.EncodeToString(digest[:])}
	if len(sections) == 0 {
		return st, nil
	}
	st.State = StateInvalid
	if len(sections) > 1 {
		st.Reason = fmt.Sprintf("%d %s sections; a signed module has exactly one", len(sections), SectionName)
		return st, nil
	}
	raw := sections[0]
	if len(raw) > maxPayload {
		st.Reason = fmt.Sprintf("signature section is %d bytes (limit %d)", len(raw), maxPayload)
		return st, nil
	}
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		st.Reason = "signature section is not the expected JSON: " + err.Error()
		return st, nil
	}
	if p.Version != 1 || p.Algorithm != Algorithm {
		st.Reason = fmt.Sprintf("unsupported signature version %d / algorithm %q (want 1 / %q)", p.Version, p.Algorithm, Algorithm)
		return st, nil
	}
	pub, err := ParsePublicKey(p.PublicKey)
	if err != nil {
		st.Reason = err.Error()
		return st, nil
	}
	st.PublicKey = FormatPublicKey(pub)
	st.KeyID = Fingerprint(pub)
	if p.KeyID != st.KeyID {
		st.Reason = fmt.Sprintf("key_id %q does not match the public key (%s)", p.KeyID, st.KeyID)
		return st, nil
	}
	if p.Digest != st.Digest {
		st.Reason = fmt.Sprintf("module was changed after signing: its digest is %s, the signature covers %s", st.Digest, abbreviate(p.Digest))
		return st, nil
	}
	sig, err := base64.StdEncoding.DecodeString(p.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		st.Reason = "signature is not 64 bytes of base64"
		return st, nil
	}
	if !ed25519.Verify(pub, message(digest), sig) {
		st.Reason = "ed25519 signature does not verify against the named key"
		return st, nil
	}
	st.State = StateValid
	st.Reason = ""
	for _, k := range trusted {
		if k.Equal(pub) {
			st.Trusted = true
			break
		}
	}
	return st, nil
}

// Admit applies the operator's signature policy to a verified status: an invalid
// signature is always refused (it means the file was altered after signing);
// with require set, an unsigned module or one signed by an untrusted key is refused.
// The error says what to do.
func Admit(st *Status, require bool) error {
	if st == nil {
		return errors.New("signature: no verification status")
	}
	switch st.State {
	case StateInvalid:
		return fmt.Errorf("signature check failed: %s; re-sign the module with `openhuman-core tools sign` or obtain an unaltered copy", st)
	case StateUnsigned:
		if require {
			return errors.New("policy requires a signature ([trust] require_signature = true) but the module is unsigned; sign it with `openhuman-core tools sign FILE.wasm --key KEY` and add the public key to [trust] keys")
		}
	case StateValid:
		if require && !st.Trusted {
			return fmt.Errorf("policy requires a trusted signature but key %s is not in [trust] keys; if you trust the signer add %q to [trust] keys in policy.toml", st.KeyID, st.PublicKey)
		}
	default:
		return fmt.Errorf("signature: unknown state %q", st.State)
	}
	return nil
}

// Check verifies module and applies the policy in one call: the entry point for the
// runtime and policy loader. keys are the policy's [trust] keys ("ed25519:<base64>").
func Check(module []byte, keys []string, require bool) (*Status, error) {
	pubs, err := ParsePublicKeys(keys)
	if err != nil {
		return nil, fmt.Errorf("policy [trust] keys: %w", err)
	}
	st, err := Verify(module, pubs)
	if err != nil {
		return nil, err
	}
	return st, Admit(st, require)
}

func abbreviate(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
