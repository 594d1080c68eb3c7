package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/analysis"
)

// tokenizerFixture holds the patterns where a tokenizer and a Go analyzer could
// part: diacritics (precomposed and combining), case folding beyond ASCII,
// apostrophes and hyphens, digits inside words, e-mail addresses and URLs,
// scripts without spaces, ligatures and letters without a decomposition.
var tokenizerFixture = []string{
	"Hey Mel! Good to see you! I'm swamped with the kids & work. What's up?",
	"Café naïve façade résumé coöperate Ångström Øresund Łódź Straße İstanbul ΑΘΗΝΑ Москва",
	"e\u0301tude (a combining acute) and Ｆｕｌｌｗｉｄｔｈ letters, ﬁnance ligature",
	"micah@example.org wrote https://example.com/path?q=1#frag at 10:45pm on 2023-05-08",
	"running runs ran runner generalizations conditional hopefulness relational",
	"日本語のテキスト と 中文文本 and 한국어 텍스트 mixed with English words",
	"x1 2nd 3rd 4th 1,000,000 3.14159 0xFF v2.0.1 COVID-19 e-mail re-read don't can't",
	"emoji 😀 sit between words🙂here and ❤️ there; tabs\tand\nnewlines",
	"ﬀ ﬃ Ǆ ǅ ǆ Ǳ ǲ ǳ ẞ ſ Ω Å K µ",
	// Code points SQLite's category table does not list are word characters:
	// emoji alone, glued to words, with skin tones and joiners.
	"Stretching 🧘 today, words🙂here, 👍🏻thanks, 🧘🏻\u200d♀️ and 🟢 done",
	// Combining marks: U+0300–U+0331 continue a word and fold away; others split it.
	"e\u0301tude cafe\u0301 a\u0332b \u05e9\u05c1\u05dc\u05d5\u05b9\u05dd ne\u0303o x\u0338y \u0301alone",
	// Folds: the long s, sharp s (kept: straß), Deseret, fullwidth, Greek final sigma.
	"ſtraße STRASSE 𐐀𐐨 ＡＢＣ ΟΔΟΣ οδος Ǆemal",
	// Porter on words with digits or non-ASCII bytes, and on short stems.
	"1900s 104fps 12s 3aissue 20laws 23heading d189e05d236769c1e5594af9db4d6eacb86fc16e straße façades naïveties",
	"eyed eyes ies sses ying aing eed feed agreed bled hoping hopping filing falling",
	// SQLite's reading of what is not UTF-8, U+FFFE/U+FFFF and the last planes.
	"caf\xe9 \xff\xfe bad \xc3 \x80\xbf ok \xed\xa0\x80 \uffff\ufffe \U00100000x \U0010fffd",
	// Words longer than FTS5's 32 KiB term limit are cut (here inside a code point).
	strings.Repeat("ab", 17000) + " " + "a" + strings.Repeat("é", 17000) + " end",
}

// TestFTSTokenizerIsTheAnalyzer proves the SQLite backend's FTS5 tokenizer equal
// to internal/analysis, the analyzer the ranking queries with: every text's terms
// as FTS5 indexes them (fts5vocab, instance by instance, in order) are exactly
// analysis.Stem of analysis.Words of the text. It runs over the fixture above and,
// when ../shared is present, over every turn of the LoCoMo conversations and every
// UTF-8 file of the real exports.
func TestFTSTokenizerIsTheAnalyzer(t *testing.T) {
	texts := append([]string(nil), tokenizerFixture...)
	n := len(texts)
	texts = append(texts, sharedTexts(t)...)
	if len(texts) == n {
		t.Logf("../shared is not present: checked the %d fixture texts only", n)
	}
	mismatches, words := compareTokenizer(t, texts)
	t.Logf("%d texts, %d words: FTS5 (%s) and internal/analysis agree on every one", len(texts), words, ftsTokenizer)
	if len(mismatches) > 0 {
		for i, m := range mismatches {
			if i == 20 {
				t.Errorf("… and %d more", len(mismatches)-20)
				break
			}
			t.Error(m)
		}
	}
}

// compareTokenizer indexes texts in an FTS5 table with the store's tokenizer and
// compares each text's index terms with the analyzer's, returning a line per text
// that differs and the number of words compared.
func compareTokenizer(t *testing.T, texts []string) ([]string, int) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "tok.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE VIRTUAL TABLE t USING fts5(x, tokenize='` + ftsTokenizer + `')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t(rowid, x) VALUES (?, ?)`, i+1, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(texts))
	rows, err := db.QueryContext(ctx, `SELECT term, doc FROM v ORDER BY doc, offset`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var term string
		var doc int
		if err := rows.Scan(&term, &doc); err != nil {
			t.Fatal(err)
		}
		got[doc-1] = append(got[doc-1], term)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var out []string
	words := 0
	for i, s := range texts {
		var want []string
		for _, w := range analysis.Words(s) {
			want = append(want, analysis.Stem(w))
		}
		words += len(want)
		if d := firstDifference(got[i], want); d != "" {
			out = append(out, fmt.Sprintf("text %d (%.60q): %s", i+1, s, d))
		}
	}
	return out, words
}

// firstDifference describes where FTS5's terms and the analyzer's first part.
func firstDifference(fts, want []string) string {
	for j := 0; j < len(fts) || j < len(want); j++ {
		var a, b string
		if j < len(fts) {
			a = fts[j]
		}
		if j < len(want) {
			b = want[j]
		}
		if a != b {
			return fmt.Sprintf("term %d: FTS5 %q, analysis %q (FTS5 %d terms, analysis %d)", j, a, b, len(fts), len(want))
		}
	}
	return ""
}

// sharedTexts returns every LoCoMo turn and every UTF-8 real-data file of
// ../shared, cut at line ends into texts of at most 64 KiB (none when ../shared is
// absent).
func sharedTexts(t *testing.T) []string {
	t.Helper()
	var texts []string
	if files, _ := filepath.Glob(filepath.Join(sharedRoot(), "locomo", "*.json")); len(files) > 0 {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var conv map[string]json.RawMessage
			if err := json.Unmarshal(b, &conv); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for k, v := range conv {
				if !strings.HasPrefix(k, "session_") || strings.HasSuffix(k, "date_time") {
					continue
				}
				var turns []struct{ Text string }
				if json.Unmarshal(v, &turns) == nil {
					for _, tu := range turns {
						texts = append(texts, tu.Text)
					}
				}
			}
		}
	}
	root := filepath.Join(sharedRoot(), "realdata")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || !utf8.Valid(b) || strings.ContainsRune(string(b), 0) {
			return nil
		}
		for s := string(b); s != ""; {
			cut := len(s)
			if cut > 64<<10 {
				cut = strings.LastIndexByte(s[:64<<10], '\n') + 1
				if cut == 0 {
					cut = 64 << 10
					for !utf8.RuneStart(s[cut]) {
						cut--
					}
				}
			}
			texts = append(texts, s[:cut])
			s = s[cut:]
		}
		return nil
	})
	return texts
}

// sharedRoot locates ../shared as the external tests do (sharedDir in
// quality_test.go): OPENHUMAN_SHARED, else beside the repository.
func sharedRoot() string {
	if d := os.Getenv("OPENHUMAN_SHARED"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared")
}

// TestFTSTokenizerEveryCodePoint proves the analyzer equal to FTS5 for every
// code point from U+0080 to U+10FFFF (surrogates too, as the bytes UTF-8 would
// give them): each one alone, which tests whether it starts a word and how it
// folds, and between two letters, which tests whether it continues one. The
// code points go to FTS5 a block at a time; a block that differs is taken apart
// to name its code points.
func TestFTSTokenizerEveryCodePoint(t *testing.T) {
	const block = 256
	var texts []string
	for lo := rune(0x80); lo <= 0x10FFFF; lo += block {
		texts = append(texts, codePointText(lo, min(lo+block, 0x110000)))
	}
	mismatches, words := compareTokenizer(t, texts)
	if len(mismatches) == 0 {
		t.Logf("U+0080..U+10FFFF alone and inside a word, %d words: FTS5 and internal/analysis agree on every one", words)
		return
	}
	var single []string
	var lows []rune
	for _, m := range mismatches {
		var n int
		fmt.Sscanf(m, "text %d", &n)
		lo := 0x80 + rune(n-1)*block
		for c := lo; c < lo+block && c <= 0x10FFFF; c++ {
			single = append(single, codePointText(c, c+1))
			lows = append(lows, c)
		}
	}
	detail, _ := compareTokenizer(t, single)
	t.Errorf("%d blocks of %d code points differ (after a modernc.org/sqlite upgrade, run go generate ./internal/analysis)", len(mismatches), block)
	for i, m := range detail {
		if i == 30 {
			t.Errorf("… and %d more code points", len(detail)-30)
			break
		}
		var n int
		fmt.Sscanf(m, "text %d", &n)
		t.Errorf("U+%04X: %s", lows[n-1], m[strings.Index(m, ": ")+2:])
	}
}

// codePointText writes each code point of [lo, hi) alone and between "a" and
// "b", with its UTF-8 bytes written out even for surrogates.
func codePointText(lo, hi rune) string {
	var b []byte
	for c := lo; c < hi; c++ {
		enc := encodeAny(c)
		b = append(b, ' ')
		b = append(b, enc...)
		b = append(b, " a"...)
		b = append(b, enc...)
		b = append(b, 'b')
	}
	return string(b)
}

// encodeAny is UTF-8 encoding without the check utf8.EncodeRune makes for
// surrogates.
func encodeAny(c rune) []byte {
	switch {
	case c < 0x800:
		return []byte{0xC0 | byte(c>>6), 0x80 | byte(c&0x3F)}
	case c < 0x10000:
		return []byte{0xE0 | byte(c>>12), 0x80 | byte(c>>6&0x3F), 0x80 | byte(c&0x3F)}
	default:
		return []byte{0xF0 | byte(c>>18), 0x80 | byte(c>>12&0x3F), 0x80 | byte(c>>6&0x3F), 0x80 | byte(c&0x3F)}
	}
}

// TestFTSTokenizerAnyBytes feeds FTS5 and the analyzer texts of random bytes
// (invalid UTF-8, stray continuation bytes, overlong and truncated sequences
// mixed with letters and separators): the analyzer reads bytes as SQLite does.
func TestFTSTokenizerAnyBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	pieces := [][]byte{[]byte("a"), []byte("Z"), []byte("9"), []byte(" "), []byte("."), []byte("é"), []byte("🧘"),
		[]byte("\u0301"), {0x80}, {0xBF}, {0xC0}, {0xC3}, {0xE2}, {0xED}, {0xF0}, {0xF8}, {0xFF}, {0xC0, 0x80},
		{0xE0, 0x80, 0x80}, {0xF4, 0x90, 0x80, 0x80}, {0xFC, 0x80, 0x80, 0x80, 0x80, 0x80}, []byte("ing"), []byte("s")}
	var texts []string
	for range 20000 {
		var b []byte
		for range 1 + rng.IntN(24) {
			if rng.IntN(4) == 0 {
				b = append(b, byte(rng.IntN(256)))
			} else {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
		}
		texts = append(texts, string(b))
	}
	mismatches, words := compareTokenizer(t, texts)
	t.Logf("%d texts of random bytes, %d words", len(texts), words)
	for i, m := range mismatches {
		if i == 20 {
			t.Errorf("… and %d more", len(mismatches)-20)
			break
		}
		t.Error(m)
	}
}

// TestFTSTokenizerPorterForms proves the stemmer equal to FTS5's porter on every
// suffix its steps know, after stems that do and do not meet their conditions
// (no vowel, m = 1 with and without *o, m > 1, y as vowel and consonant, digits,
// non-ASCII bytes), alone and followed by the endings steps 1a and 1b remove.
func TestFTSTokenizerPorterForms(t *testing.T) {
	stems := []string{"", "b", "a", "y", "ey", "by", "ab", "at", "tr", "bl", "iz", "hop", "fil", "feed", "cat",
		"conn", "rel", "gener", "caus", "oscill", "adopt", "replac", "sky", "toy", "happ", "1", "19", "x1", "é", "aé",
		"straß", "ful", "ion", "s", "t", "ss", "ll", "fall", "contr", "bow", "box", "tray", "cry"}
	suffixes := []string{"", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "y", "e", "l", "ll", "at", "bl", "iz",
		"ational", "tional", "enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli", "ousli", "ization", "ation",
		"ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "icate", "ative", "alize",
		"iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
		"ent", "sion", "tion", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "ee", "bb", "zz"}
	endings := []string{"", "s", "es", "ed", "ing", "ly", "e"}
	var words []string
	for _, st := range stems {
		for _, su := range suffixes {
			for _, en := range endings {
				words = append(words, st+su+en)
			}
		}
	}
	var texts []string
	for i := 0; i < len(words); i += 200 {
		texts = append(texts, strings.Join(words[i:min(i+200, len(words))], " "))
	}
	mismatches, n := compareTokenizer(t, texts)
	t.Logf("%d word forms", n)
	for i, m := range mismatches {
		if i == 20 {
			t.Errorf("… and %d more", len(mismatches)-20)
			break
		}
		t.Error(m)
	}
}
