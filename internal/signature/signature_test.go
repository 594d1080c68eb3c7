package signature

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/wasmbin"
)

// testModule builds a small valid module with a code section and a packed manifest.
func testModule(t *testing.T) []byte {
	t.Helper()
	var b wasmbin.Builder
	sig := wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32, wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I64}}
	b.ImportFunc("openhuman", "memory_search", sig)
	b.Memory(1)
	b.Func("oh_alloc", wasmbin.FuncType{Params: []wasmbin.ValType{wasmbin.I32}, Results: []wasmbin.ValType{wasmbin.I32}}, []byte{0x41, 0x10}) // i32.const 16
	b.Func("oh_call", sig, []byte{0x42, 0x2a})                                                                                                // i64.const 42
	mod, err := wasmbin.SetCustomSection(b.Bytes(), "openhuman.manifest", []byte("abi = \"openhuman/1\"\ncapabilities = [\"memory.read\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

func sectionStart(t *testing.T, mod []byte, id byte) (int, int) {
	t.Helper()
	m, err := wasmbin.Parse(mod)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Sections {
		if s.ID == id {
			return s.Start, s.End
		}
	}
	t.Fatalf("no section %d", id)
	return 0, 0
}

func TestSignVerifyRoundTrip(t *testing.T) {
	mod := testModule(t)
	pub, priv := newKey(t)
	other, _ := newKey(t)

	st, err := Verify(mod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateUnsigned || st.String() != "unsigned" {
		t.Fatalf("unsigned module: %+v", st)
	}
	signed, err := Sign(mod, priv)
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := wasmbin.StripCustomSection(signed, SectionName)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stripped, mod) {
		t.Fatal("stripping the signature does not give back the signed bytes")
	}
	st, err = Verify(signed, []ed25519.PublicKey{other, pub})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateValid || !st.Trusted || st.KeyID != Fingerprint(pub) || st.PublicKey != FormatPublicKey(pub) {
		t.Fatalf("signed module: %+v", st)
	}
	if !strings.Contains(st.String(), "signed by key "+Fingerprint(pub)+" (valid, trusted)") {
		t.Errorf("String() = %q", st.String())
	}
	unsignedDigest, _ := Verify(mod, nil)
	if st.Digest != unsignedDigest.Digest {
		t.Errorf("digest of signed %s != digest of unsigned %s", st.Digest, unsignedDigest.Digest)
	}
	st, _ = Verify(signed, []ed25519.PublicKey{other})
	if st.State != StateValid || st.Trusted {
		t.Fatalf("untrusted key: %+v", st)
	}
	// Signing again (e.g. with another key) replaces the section; never two.
	_, priv2 := newKey(t)
	resigned, err := Sign(signed, priv2)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := wasmbin.Parse(resigned)
	n := 0
	for _, cs := range m.CustomSections {
		if cs.Name == SectionName {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d signature sections after re-signing", n)
	}
	st, _ = Verify(resigned, []ed25519.PublicKey{pub})
	if st.State != StateValid || st.Trusted || st.KeyID != Fingerprint(priv2.Public().(ed25519.PublicKey)) {
		t.Fatalf("re-signed: %+v", st)
	}
}

func TestTamperingBreaksSignature(t *testing.T) {
	mod := testModule(t)
	pub, priv := newKey(t)
	signed, err := Sign(mod, priv)
	if err != nil {
		t.Fatal(err)
	}
	codeStart, codeEnd := sectionStart(t, signed, wasmbin.SectionCode)
	m, _ := wasmbin.Parse(signed)
	var manifestAt int
	for _, cs := range m.CustomSections {
		if cs.Name == "openhuman.manifest" {
			manifestAt = cs.PayloadOffset + 10
		}
	}
	flip := func(at int) []byte {
		c := append([]byte{}, signed...)
		c[at] ^= 0x01
		return c
	}
	repacked, err := wasmbin.SetCustomSection(signed, "openhuman.manifest", []byte("abi = \"openhuman/1\"\ncapabilities = [\"memory.read\", \"web.searxng\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	extra := wasmbin.AppendCustomSection(signed, "name", []byte{0})
	cases := map[string][]byte{
		"code byte":            flip(codeEnd - 2),
		"code first byte":      flip(codeStart + 1),
		"manifest byte":        flip(manifestAt),
		"manifest re-packed":   repacked,
		"custom section added": extra,
	}
	for name, c := range cases {
		st, err := Verify(c, []ed25519.PublicKey{pub})
		if err != nil {
			// a flip may make the module unparsable: that is a refusal too, but say so
			if !errors.Is(err, wasmbin.ErrInvalid) {
				t.Errorf("%s: unexpected error %v", name, err)
			}
			continue
		}
		if st.State != StateInvalid {
			t.Errorf("%s: state %s, want invalid", name, st.State)
			continue
		}
		if !strings.Contains(st.Reason, "changed after signing") {
			t.Errorf("%s: reason %q", name, st.Reason)
		}
		if err := Admit(st, false); err == nil || !strings.Contains(err.Error(), "INVALID") {
			t.Errorf("%s: Admit(require=false) = %v, want refusal", name, err)
		}
	}
}

func TestForgedSections(t *testing.T) {
	mod := testModule(t)
	pub, priv := newKey(t)
	signed, _ := Sign(mod, priv)
	payload, _, _ := wasmbin.CustomSection(signed, SectionName)

	_, evil := newKey(t)
	evilSigned, _ := Sign(mod, evil)
	evilPayload, _, _ := wasmbin.CustomSection(evilSigned, SectionName)

	swapKey := strings.Replace(string(payload), FormatPublicKey(pub), FormatPublicKey(evil.Public().(ed25519.PublicKey)), 1)
	swapBoth := strings.Replace(swapKey, Fingerprint(pub), Fingerprint(evil.Public().(ed25519.PublicKey)), 1)
	// Keep the evil key's id/key but the good signature bytes: does not verify.
	cases := map[string]struct {
		payload string
		reason  string
	}{
		"garbage":          {"not json", "not the expected JSON"},
		"unknown field":    {strings.Replace(string(payload), `{"v":1`, `{"x":1,"v":1`, 1), "not the expected JSON"},
		"other algorithm":  {strings.Replace(string(payload), `"ed25519"`, `"rsa"`, 1), "unsupported signature"},
		"key id mismatch":  {swapKey, "does not match the public key"},
		"key swapped":      {swapBoth, "does not verify"},
		"signature mangle": {strings.Replace(string(evilPayload), FormatPublicKey(evil.Public().(ed25519.PublicKey)), FormatPublicKey(pub), 1), "does not match"},
		"bad base64":       {strings.Replace(string(payload), `"signature":"`, `"signature":"!!`, 1), "64 bytes"},
	}
	for name, c := range cases {
		forged, err := wasmbin.SetCustomSection(mod, SectionName, []byte(c.payload))
		if err != nil {
			t.Fatal(err)
		}
		st, err := Verify(forged, []ed25519.PublicKey{pub})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.State != StateInvalid || !strings.Contains(st.Reason, c.reason) {
			t.Errorf("%s: %+v, want invalid with %q", name, st, c.reason)
		}
	}
	two := wasmbin.AppendCustomSection(signed, SectionName, payload)
	st, _ := Verify(two, []ed25519.PublicKey{pub})
	if st.State != StateInvalid || !strings.Contains(st.Reason, "exactly one") {
		t.Errorf("two sections: %+v", st)
	}
	if _, err := Verify([]byte("\x7fELF"), nil); !errors.Is(err, wasmbin.ErrInvalid) {
		t.Errorf("non-wasm: %v", err)
	}
	if _, err := Sign([]byte("nope"), priv); err == nil {
		t.Error("Sign accepted a non-module")
	}
}

func TestAdmitAndCheck(t *testing.T) {
	mod := testModule(t)
	pub, priv := newKey(t)
	other, _ := newKey(t)
	signed, _ := Sign(mod, priv)
	k := FormatPublicKey(pub)
	o := FormatPublicKey(other)
	cases := []struct {
		name    string
		mod     []byte
		keys    []string
		require bool
		wantErr string
	}{
		{"unsigned, not required", mod, nil, false, ""},
		{"unsigned, required", mod, []string{k}, true, "module is unsigned"},
		{"trusted, required", signed, []string{o, k}, true, ""},
		{"untrusted, required", signed, []string{o}, true, "is not in [trust] keys"},
		{"untrusted, not required", signed, nil, false, ""},
		{"bad trust key", signed, []string{"ssh-ed25519 AAAA"}, false, "trust key 1"},
	}
	for _, c := range cases {
		_, err := Check(c.mod, c.keys, c.require)
		if c.wantErr == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.wantErr)
		}
	}
	if err := Admit(nil, false); err == nil {
		t.Error("Admit(nil) accepted")
	}
}

func TestKeyEncoding(t *testing.T) {
	pub, priv := newKey(t)
	got, err := ParsePublicKey("  " + FormatPublicKey(pub) + "\n")
	if err != nil || !got.Equal(pub) {
		t.Fatalf("public key round trip: %v", err)
	}
	pemBytes, err := MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(pemBytes, []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Errorf("not PKCS#8 PEM: %s", pemBytes)
	}
	back, err := ParsePrivateKey(pemBytes)
	if err != nil || !back.Equal(priv) {
		t.Fatalf("private key round trip: %v", err)
	}
	for in, want := range map[string]string{
		"AAAA":         "want the form",
		"ed25519:***":  "base64",
		"ed25519:AAAA": "3 bytes",
		"ed25519:" + strings.Repeat("A", 43) + "=": "",
	} {
		_, err := ParsePublicKey(in)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if _, err := ParsePrivateKey([]byte("hello")); err == nil || !strings.Contains(err.Error(), "no PEM block") {
		t.Errorf("garbage private key: %v", err)
	}
	if _, err := ParsePrivateKey([]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")); err == nil || !strings.Contains(err.Error(), "PEM block type") {
		t.Errorf("public key as private: %v", err)
	}
	if fp := Fingerprint(pub); !strings.HasPrefix(fp, "SHA256:") || len(fp) != len("SHA256:")+16 {
		t.Errorf("fingerprint %q", fp)
	}
}

func BenchmarkVerify(b *testing.B) {
	mod := make([]byte, 0)
	var bl wasmbin.Builder
	bl.Memory(1)
	bl.Func("oh_call", wasmbin.FuncType{}, nil)
	mod = wasmbin.AppendCustomSection(bl.Bytes(), "data", bytes.Repeat([]byte{7}, 3<<20))
	_, priv, _ := GenerateKey(nil)
	signed, _ := Sign(mod, priv)
	pub := priv.Public().(ed25519.PublicKey)
	b.SetBytes(int64(len(signed)))
	for b.Loop() {
		st, err := Verify(signed, []ed25519.PublicKey{pub})
		if err != nil || st.State != StateValid {
			b.Fatal(st, err)
		}
	}
}
