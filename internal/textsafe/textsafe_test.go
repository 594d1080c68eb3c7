package textsafe

import "testing"

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":           "plain name",
		"é ü 日本":               "é ü 日本",
		"\x1b[2Jclear":         `\u001b[2Jclear`,
		"a\tb\nc\rd":           `a\tb\nc\rd`,
		"del\x7f c1\u0085":     `del\u007f c1\u0085`,
		"bidi\u202eevil\u2066": `bidi\u202eevil\u2066`,
		"bad\xffutf8":          `bad\xffutf8`,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Text("line one\n\x1b[1Aline two"); got != "line one\n\\u001b[1Aline two" {
		t.Errorf("Text keeps newlines and escapes the rest: %q", got)
	}
}

// Name leaves a printable file name as it is and Go-quotes any other.
func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"notes/2024 plan.md": "notes/2024 plan.md",
		"résumé.txt":         "résumé.txt",
		"evil\nname.md":      `"evil\nname.md"`,
		"\x1b[2J.md":         `"\x1b[2J.md"`,
		"bad\xff.md":         `"bad\xff.md"`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
}
