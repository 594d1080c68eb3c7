package lazyre

import "testing"

// A pattern compiles on first use to its own source, once, and CompileAll
// compiles the ones not used yet.
func TestCompilesOnFirstUse(t *testing.T) {
	a := New(`^a+$`)
	b := New(`b(\d)`)
	if a.re.Load() != nil || b.re.Load() != nil {
		t.Fatal("compiled before use")
	}
	if !a.MatchString("aaa") || a.MatchString("ab") {
		t.Error("a does not match as written")
	}
	first := a.Get()
	if a.Get() != first {
		t.Error("compiled twice")
	}
	if b.re.Load() != nil {
		t.Error("b compiled by a's use")
	}
	CompileAll()
	if b.re.Load() == nil || b.Get().String() != b.Source() {
		t.Errorf("CompileAll left b %v", b.re.Load())
	}
	if m := b.FindStringSubmatch("xb7"); len(m) != 2 || m[1] != "7" {
		t.Errorf("b matched %q", m)
	}
	if Count() < 2 {
		t.Errorf("Count %d", Count())
	}
}

// An invalid pattern panics when first used, as regexp.MustCompile would.
func TestInvalidPanicsOnUse(t *testing.T) {
	bad := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	bad.Get()
}
