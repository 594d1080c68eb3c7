package analysis

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The expected values below are what SQLite's FTS5 (porter unicode61
// remove_diacritics 2) indexes; internal/memtree's TestFTSTokenizer* tests
// prove the analyzer equal to FTS5 itself on every code point and corpus word.

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hey Mel! What's up?", []string{"hey", "mel", "what", "s", "up"}},
		{"words🙂here and 🧘 stretching", []string{"words🙂here", "and", "🧘", "stretching"}},
		{"e\u0301tude CAFÉ", []string{"etude", "cafe"}},
		{"a\u0332b", []string{"a", "b"}},                 // U+0332 is not one of FTS5's diacritics: it splits
		{"ſtraße ＡＢＣ 𐐀", []string{"straße", "ａｂｃ", "𐐨"}}, // fullwidth letters only lose their case
		{"caf\xe9 ok", []string{"caf", "ok"}},            // a lead byte without its continuation reads as U+FFFD
		{"", nil},
		{" .,; ", nil},
	} {
		if got := Words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("ab", MaxTermBytes)
	if got := Words(long + " x"); len(got) != 2 || got[0] != long[:MaxTermBytes] {
		t.Errorf("a word of %d bytes: got %d words, the first of %d bytes; want it cut to %d", len(long), len(got), len(got[0]), MaxTermBytes)
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"running": "run", "generalizations": "gener", "hopefulness": "hope", "relational": "relat",
		"conditional": "condit", "agreed": "agre", "feed": "feed", "hopping": "hop", "filing": "file",
		"1900s": "1900", "104fps": "104fp", "12s": "12", "straße": "straß", "eyed": "ei", "ies": "ie",
		"sses": "sse", "is": "is", "ok": "ok",
	} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
	if long := strings.Repeat("a", maxStemBytes) + "s"; Stem(long) != long {
		t.Errorf("a word longer than %d bytes was stemmed", maxStemBytes)
	}
}

func TestFold(t *testing.T) {
	if got, want := Fold("ÉTUDE e\u0301 ſ Ω K!"), "etude e s ω k!"; got != want {
		t.Errorf("Fold = %q, want %q", got, want)
	}
}

// TestASCIIFastPaths proves the ASCII shortcuts of Words and AppendDistinctTerms
// equal to the general tokenizer on random ASCII text.
func TestASCIIFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aAbBeEiIsSyYzZ09 .-'_\t\n@"
	for range 5000 {
		b := make([]byte, rng.IntN(60))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(b)
		general := unicodeWords(nil, s)
		if got := Words(s); !slices.Equal(got, general) {
			t.Fatalf("Words(%q) = %q, the general tokenizer %q", s, got, general)
		}
		var want []string
		for _, w := range general {
			if ct := ContentTerm(w); ct != "" && !slices.Contains(want, ct) {
				want = append(want, ct)
			}
		}
		if got := AppendDistinctTerms(nil, s); !slices.Equal(got, want) {
			t.Fatalf("AppendDistinctTerms(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestTokensAreWords checks that Tokens splits as Words does and that each
// token's offsets hold the characters it folds from.
func TestTokensAreWords(t *testing.T) {
	texts := []string{
		"", "  ", "Hello, World!", "Ünïcödé straße — naïve café", "e-mail: x@y.z. Next sentence",
		"emoji 😀 inside", "日本語のテキスト", "a\u0301b c\u0300", "tab\tand\nnewline\r\nend.", "x\xffy", "ÀÉÎ",
	}
	for _, s := range texts {
		type token struct {
			Word       string
			Start, End int
		}
		var toks []token
		Tokens(s, func(w []byte, start, end int) { toks = append(toks, token{string(w), start, end}) })
		ws := Words(s)
		if len(toks) != len(ws) {
			t.Fatalf("Tokens(%q) gave %d words, Words %d", s, len(toks), len(ws))
		}
		prev := 0
		for i, tk := range toks {
			if tk.Word != ws[i] {
				t.Errorf("Tokens(%q)[%d] = %q, Words %q", s, i, tk.Word, ws[i])
			}
			if tk.Start < prev || tk.End <= tk.Start || tk.End > len(s) {
				t.Errorf("Tokens(%q)[%d] = %q at [%d,%d): offsets out of order", s, i, tk.Word, tk.Start, tk.End)
				continue
			}
			if got := Words(s[tk.Start:tk.End]); len(got) != 1 || got[0] != tk.Word {
				t.Errorf("Tokens(%q)[%d]: text %q at [%d,%d) splits as %q, want the one word %q", s, i, s[tk.Start:tk.End], tk.Start, tk.End, got, tk.Word)
			}
			prev = tk.End
		}
	}
}
