package pivot

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/pivot/pivottest"
)

func TestReadParsesFreeDictEntries(t *testing.T) {
	base := pivottest.WriteDictd(t, t.TempDir(), "freedict-eng-deu", []string{
		"certificate /səˈtɪfɪkət/\nZertifikat <neut>, Bescheinigung <fem> [adm.]\n      \"a medical certificate\"  - ein ärztliches Attest\n see: {certificates}\n\n",
		"check /tʃɛk/\nKontrolle <fem>; Prüfung (einer Sache) <fem>\n2. Schach <neut> [game]\n",
	})
	d, err := Read(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "eng" || d.To != "deu" || d.Name != "freedict-eng-deu" {
		t.Fatalf("name parsed as %q %s→%s", d.Name, d.From, d.To)
	}
	want := map[string][]string{
		"certificate": {"zertifikat", "bescheinigung"},
		"check":       {"kontrolle", "prüfung", "schach"},
	}
	if !reflect.DeepEqual(d.Entries, want) {
		t.Fatalf("entries = %q\nwant %q", d.Entries, want)
	}
}

func TestBuildPivotsThroughSharedTranslations(t *testing.T) {
	dir := t.TempDir()
	// "abschluss" translates 31 English words: too vague to link any two of them.
	var vague []string
	for i := range maxFanOut + 1 {
		vague = append(vague, "term"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	en := []string{
		"cert\nZertifikat <neut>\n",
		"certificate\nZertifikat <neut>, Bescheinigung <fem>\n",
		"guideline\nRichtlinie <fem>\n",
		"policy\nRichtlinie <fem>, Politik <fem>, Police <fem>\n",
		"attestation\nBescheinigung <fem>\n",
	}
	for _, v := range vague {
		en = append(en, v+"\nAbschluss <masc>\n")
	}
	enDeu := pivottest.WriteDictd(t, dir, "freedict-eng-deu", en)
	deuEn := pivottest.WriteDictd(t, dir, "freedict-deu-eng", []string{
		"richtlinie\nguideline, policy, directive\n",
		"zertifikat\ncertificate, cert\n",
	})
	ctx := context.Background()
	dicts, entries, table := readAndBuild(t, 1, enDeu, deuEn)
	if !slices.IsSortedFunc(entries, func(a, b Entry) int { return strings.Compare(a.Word, b.Word) }) {
		t.Error("entries are not sorted by word")
	}
	// certificate → zertifikat (→ certificate, cert) and bescheinigung (→
	// certificate, attestation): cert and attestation tie both ways (each has one
	// translation), so the term decides.
	if got := table["certificate"]; len(got) != 2 || got[0].Weight != 1 || got[1].Weight != 1 ||
		got[0].Term != "attestation" || got[1].Term != "cert" {
		t.Errorf("certificate → %+v; want attestation and cert at weight 1", got)
	}
	// guideline → richtlinie → guideline, policy, directive: policy and directive
	// tie; directive (whose one translation is richtlinie) pivots back to guideline
	// more surely than policy (one of three), so it comes first.
	if got := table["guideline"]; len(got) != 2 || got[0].Term != "directive" || got[1].Term != "policy" {
		t.Errorf("guideline → %+v; want directive, then policy", got)
	}
	if got := table["directive"]; len(got) == 0 || !slices.ContainsFunc(got, func(p Paraphrase) bool { return p.Term == "guideline" }) {
		t.Errorf("directive (only in the German-English dictionary) → %+v; want guideline", got)
	}
	for _, e := range entries {
		for _, p := range e.Paraphrases {
			if p.Term == e.Word {
				t.Errorf("%s is its own paraphrase", e.Word)
			}
			if p.Weight <= 0 || p.Weight > 1 {
				t.Errorf("%s → %s weight %v outside (0, 1]", e.Word, p.Term, p.Weight)
			}
		}
	}
	for _, v := range vague {
		if got := table[v]; len(got) > 0 {
			t.Fatalf("%s → %+v through a foreign word with %d English translations; want nothing", v, got, len(vague))
		}
	}
	again, err := Build(ctx, dicts...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(entries, again) {
		t.Error("two builds from the same dictionaries differ")
	}
	if _, err := Build(ctx, &Dictionary{Name: "freedict-deu-fra", From: "deu", To: "fra"}); err == nil {
		t.Error("Build without an English dictionary succeeded")
	}
}

func TestReadReportsBadDictionaries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := pivottest.WriteDictd(t, dir, "freedict-eng-deu", []string{"cert\nZertifikat\n"})
	// broken writes the dictionary name with the good one's files, except for a
	// non-empty index or data given here.
	broken := func(name, index, data string) string {
		b := filepath.Join(dir, name)
		for ext, body := range map[string]string{".index": index, ".dict.dz": data} {
			if body == "" {
				copyFile(t, good+ext, b+ext)
			} else if err := os.WriteFile(b+ext, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	cases := []struct {
		name  string
		setup func() string
		want  []string
	}{
		{"no language pair", func() string {
			return pivottest.WriteDictd(t, dir, "dictionary", []string{"cert\nZertifikat\n"})
		}, []string{"dictionary", "language pair"}},
		{"missing files", func() string { return filepath.Join(dir, "freedict-eng-fra") }, []string{"freedict-eng-fra.index"}},
		{"index line without tabs", func() string {
			return broken("freedict-eng-ita", "00-database-info\tA\tB\ncert Zertifikat\n", "")
		}, []string{"freedict-eng-ita.index line 2", "tabs"}},
		{"entry past the end", func() string {
			return broken("freedict-eng-spa", "cert\tA\t////\n", "")
		}, []string{"freedict-eng-spa.index line 1", "runs past the end"}},
		{"bad number", func() string {
			return broken("freedict-eng-nld", "cert\tA\tB!\n", "")
		}, []string{"freedict-eng-nld.index line 1", "base64"}},
		{"data not gzip", func() string {
			return broken("freedict-eng-swe", "", "not compressed")
		}, []string{"freedict-eng-swe.dict.dz"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := c.setup()
			_, err := Read(ctx, base)
			if err == nil {
				t.Fatal("Read succeeded")
			}
			err2 := NewBuilder().ReadDictionary(ctx, base)
			if err2 == nil {
				t.Fatal("Builder.ReadDictionary succeeded")
			}
			for _, err := range []error{err, err2} {
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
			}
		})
	}
}

// readAndBuild reads the dictionaries at bases, each with at least minHeadwords
// entries, and builds their table, also as a map from word to paraphrases.
func readAndBuild(t *testing.T, minHeadwords int, bases ...string) ([]*Dictionary, []Entry, map[string][]Paraphrase) {
	t.Helper()
	ctx := context.Background()
	var dicts []*Dictionary
	for _, b := range bases {
		d, err := Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Entries) < minHeadwords {
			t.Fatalf("%s: only %d headwords", b, len(d.Entries))
		}
		dicts = append(dicts, d)
	}
	entries, err := Build(ctx, dicts...)
	if err != nil {
		t.Fatal(err)
	}
	table := map[string][]Paraphrase{}
	for _, e := range entries {
		table[e.Word] = e.Paraphrases
	}
	return dicts, entries, table
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildStreaming builds the table of the dictionaries at bases with a Builder.
func buildStreaming(t *testing.T, bases ...string) []Entry {
	t.Helper()
	ctx := context.Background()
	b := NewBuilder()
	for _, base := range bases {
		if err := b.ReadDictionary(ctx, base); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := b.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// buildOld builds the table of the dictionaries at bases the way it was built
// before the Builder: each read whole, then pivoted.
func buildOld(t *testing.T, bases ...string) []Entry {
	t.Helper()
	ctx := context.Background()
	var dicts []*Dictionary
	for _, base := range bases {
		d, err := oldRead(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		dicts = append(dicts, d)
	}
	entries, err := oldBuild(ctx, dicts...)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// reverseIndex rewrites the index of the database at base with its lines in
// reverse order, so that the data is no longer in index order (as in FreeDict,
// whose index is sorted and whose data is not).
func reverseIndex(t *testing.T, base string) {
	t.Helper()
	b, err := os.ReadFile(base + ".index")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Reverse(lines)
	if err := os.WriteFile(base+".index", []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The Builder reads the dictionaries one entry at a time, in data order, and
// gives the very table of the old whole-dictionary path, weights equal to the last
// bit: on random dictionaries whose headwords recur on several index lines, whose
// words have many shared translations (so that sums of three and more terms are
// common) and whose index is not in data order.
func TestBuilderGivesTheOldTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 7))
	word := func(prefix string, n int) string {
		return prefix + string(rune('a'+n%26)) + string(rune('a'+n/26%26))
	}
	for round := range 6 {
		dir := t.TempDir()
		var en, de []string
		for range 500 {
			var ts []string
			for range 1 + rng.IntN(3) {
				ts = append(ts, strings.ToUpper(word("w", rng.IntN(200)))+" <fem>")
			}
			en = append(en, word("e", rng.IntN(250))+"\n"+strings.Join(ts, ", ")+"\n")
		}
		for range 300 {
			var ts []string
			for range 1 + rng.IntN(3) {
				ts = append(ts, word("e", rng.IntN(270)))
			}
			if rng.IntN(10) == 0 {
				ts = append(ts, "not English 1")
			}
			de = append(de, word("w", rng.IntN(220))+"\n"+strings.Join(ts, "; ")+"\n")
		}
		enDeu := pivottest.WriteDictd(t, dir, "freedict-eng-deu", en)
		deuEn := pivottest.WriteDictd(t, dir, "freedict-deu-eng", de)
		if round%2 == 1 {
			reverseIndex(t, enDeu)
			reverseIndex(t, deuEn)
		}
		bases := []string{enDeu, deuEn}
		if round >= 4 {
			bases = []string{deuEn, enDeu}
		}
		want := buildOld(t, bases...)
		if len(want) < 50 {
			t.Fatalf("round %d: only %d words have paraphrases; the test dictionaries are too thin", round, len(want))
		}
		if got := buildStreaming(t, bases...); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: the Builder's table differs from the old one (%d and %d words)", round, len(got), len(want))
		}
		_, got, _ := readAndBuild(t, 1, bases...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: Build's table differs from the old one", round)
		}
	}
}

// On the real FreeDict English-German dictionaries (Debian's dict-freedict-eng-deu
// and dict-freedict-deu-eng; .ci/run installs them), the pairs the generated
// corpus's paraphrase queries need and WordNet does not give; and, unless -short,
// the table equals the one of the old whole-dictionary path entry for entry.
func TestFreeDictEnglishGerman(t *testing.T) {
	bases := []string{"/usr/share/dictd/freedict-eng-deu", "/usr/share/dictd/freedict-deu-eng"}
	for _, b := range bases {
		if _, _, ok := Files(b); !ok {
			t.Skipf("%s is not installed (apt-get install dict-freedict-eng-deu dict-freedict-deu-eng): the real dictionaries are not checked", b)
		}
	}
	entries := buildStreaming(t, bases...)
	if len(entries) < 100000 {
		t.Fatalf("only %d words have paraphrases", len(entries))
	}
	t.Logf("%d words have paraphrases", len(entries))
	table := map[string][]Paraphrase{}
	for _, e := range entries {
		table[e.Word] = e.Paraphrases
	}
	for word, want := range map[string]string{
		"certificate": "cert", "guideline": "policy", "tire": "tyre", "ballot": "vote",
		"bookstore": "bookshop", "excursion": "outing", "reservation": "booking", "notebook": "laptop",
	} {
		if !slices.ContainsFunc(table[word], func(p Paraphrase) bool { return p.Term == want }) {
			t.Errorf("%s → %+v; want %s among them", word, table[word], want)
		}
	}
	if testing.Short() {
		t.Log("-short: the table is not compared with the old path's")
		return
	}
	old := buildOld(t, bases...)
	if len(old) != len(entries) {
		t.Fatalf("the old path gives %d words, the Builder %d", len(old), len(entries))
	}
	for i := range old {
		if !reflect.DeepEqual(old[i], entries[i]) {
			t.Fatalf("entry %d: the old path gives %+v, the Builder %+v", i, old[i], entries[i])
		}
	}
}
