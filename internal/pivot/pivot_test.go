package pivot

import (
	"context"
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
			_, err := Read(ctx, c.setup())
			if err == nil {
				t.Fatal("Read succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
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

// On the real FreeDict English-German dictionaries (Debian's dict-freedict-eng-deu
// and dict-freedict-deu-eng; .ci/run installs them), the pairs the generated
// corpus's paraphrase queries need and WordNet does not give.
func TestFreeDictEnglishGerman(t *testing.T) {
	bases := []string{"/usr/share/dictd/freedict-eng-deu", "/usr/share/dictd/freedict-deu-eng"}
	for _, b := range bases {
		if _, _, ok := Files(b); !ok {
			t.Skipf("%s is not installed (apt-get install dict-freedict-eng-deu dict-freedict-deu-eng): the real dictionaries are not checked", b)
		}
	}
	_, entries, table := readAndBuild(t, 100000, bases...)
	t.Logf("%d words have paraphrases", len(entries))
	for word, want := range map[string]string{
		"certificate": "cert", "guideline": "policy", "tire": "tyre", "ballot": "vote",
		"bookstore": "bookshop", "excursion": "outing", "reservation": "booking", "notebook": "laptop",
	} {
		if !slices.ContainsFunc(table[word], func(p Paraphrase) bool { return p.Term == want }) {
			t.Errorf("%s → %+v; want %s among them", word, table[word], want)
		}
	}
}
