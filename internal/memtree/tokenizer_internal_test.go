package memtree

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
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
