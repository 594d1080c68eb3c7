package lexicon

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/lexicon/wnbuild"
)

func terms(rs []Related) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Term
	}
	return out
}

func weightOf(t *testing.T, rs []Related, term string) float32 {
	t.Helper()
	for _, r := range rs {
		if r.Term == term {
			return r.Weight
		}
	}
	t.Fatalf("%q not in expansion %v", term, terms(rs))
	return 0
}

func TestTableDecodes(t *testing.T) {
	if err := Err(); err != nil {
		t.Fatalf("embedded table: %v", err)
	}
	tb := get()
	if n := tb.wordOff.entries(); n < 140000 {
		t.Errorf("table has %d lemmas, want WordNet 3.0's ~147k", n)
	}
	if n := len(tb.synPos); n < 110000 {
		t.Errorf("table has %d synsets, want WordNet 3.0's ~117k", n)
	}
}

func TestExpandSynonyms(t *testing.T) {
	cases := []struct {
		word string
		want []string
	}{
		{"car", []string{"automobile", "auto", "motorcar"}},
		{"invoice", []string{"bill"}},
		{"meeting", []string{"group meeting", "encounter", "get together"}},
		{"automobile", []string{"car"}},
		{"stopover", []string{"layover"}},
		{"expiry", []string{"expiration"}},
		{"Cars", []string{"automobile"}}, // case and morphology
		{"bought", []string{"purchase"}}, // irregular verb
		{"motor_vehicle", []string{"automotive vehicle"}},
		{"motor vehicle", []string{"automotive vehicle"}},
	}
	for _, c := range cases {
		got := Expand(c.word)
		for _, w := range c.want {
			if !slices.Contains(terms(got), w) {
				t.Errorf("Expand(%q) = %v, missing %q", c.word, terms(got), w)
			}
		}
	}
}

func TestExpandWeights(t *testing.T) {
	car := Expand("car")
	if w := weightOf(t, car, "automobile"); w != 1 {
		t.Errorf("first-sense synonym automobile weight %v, want 1", w)
	}
	if w := weightOf(t, car, "motor vehicle"); w > 0.4 || w <= 0 {
		t.Errorf("hypernym motor vehicle weight %v, want in (0, 0.4]", w)
	}
	if w := weightOf(t, car, "railcar"); !(w < 1 && w >= 0.5) {
		t.Errorf("second-sense synonym railcar weight %v, want in [0.5, 1)", w)
	}
	for _, word := range []string{"car", "bill", "go", "meeting", "run", "set"} {
		got := Expand(word)
		if len(got) == 0 || len(got) > MaxRelated {
			t.Errorf("Expand(%q) has %d terms, want 1..%d", word, len(got), MaxRelated)
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool {
			if got[i].Weight != got[j].Weight {
				return got[i].Weight > got[j].Weight
			}
			return got[i].Term < got[j].Term
		}) {
			t.Errorf("Expand(%q) not sorted by weight desc, term: %v", word, got)
		}
		seen := map[string]bool{}
		for _, r := range got {
			if seen[r.Term] {
				t.Errorf("Expand(%q) repeats %q", word, r.Term)
			}
			seen[r.Term] = true
			if r.Weight <= 0 || r.Weight > 1 {
				t.Errorf("Expand(%q): %q weight %v out of (0,1]", word, r.Term, r.Weight)
			}
			if strings.Contains(r.Term, "_") || r.Term != strings.ToLower(r.Term) {
				t.Errorf("Expand(%q): term %q not lowercase with spaces", word, r.Term)
			}
		}
	}
}

func TestExpandExcludesWordAndInflections(t *testing.T) {
	for _, word := range []string{"car", "cars", "meeting", "go", "went", "bill"} {
		for _, r := range Expand(word) {
			if r.Term == word || slices.Contains(Base(word), r.Term) {
				t.Errorf("Expand(%q) contains the word or its base: %q", word, r.Term)
			}
		}
	}
	// "meet" is a base of "meeting": neither "meet" nor "meets"/"met" may come back.
	for _, r := range Expand("meeting") {
		if r.Term == "meet" || r.Term == "met" {
			t.Errorf("Expand(meeting) contains inflection/base %q", r.Term)
		}
	}
}

func TestBase(t *testing.T) {
	cases := map[string]string{
		"cars": "car", "went": "go", "bought": "buy", "invoices": "invoice", "boxes": "box",
		"churches": "church", "women": "woman", "running": "run", "bigger": "big", "car": "car",
		"Motor Vehicles": "motor vehicle",
	}
	for in, want := range cases {
		if got := Base(in); !slices.Contains(got, want) {
			t.Errorf("Base(%q) = %v, want it to contain %q", in, got, want)
		}
	}
	if got := Base("car"); len(got) == 0 || got[0] != "car" {
		t.Errorf("Base(car) = %v, want car first", got)
	}
}

func TestUnknownAndEmpty(t *testing.T) {
	for _, w := range []string{"", "   ", "zzxqv", "fender_bender_qq", "\x00\xff", strings.Repeat("a", 10000)} {
		if got := Expand(w); got != nil {
			t.Errorf("Expand(%q) = %v, want nil", w, got)
		}
		if got := Base(w); got != nil {
			t.Errorf("Base(%q) = %v, want nil", w, got)
		}
	}
}

func TestDecodeRejectsCorruptTables(t *testing.T) {
	if _, err := decode([]byte("not gzip")); err == nil {
		t.Error("decode accepted non-gzip input")
	}
	raw := mustGunzip(t, tableGz)
	for _, cut := range []int{3, len(wnbuild.Magic) + 5, len(raw) / 2, len(raw) - 1} {
		if _, err := decode(gz(t, raw[:cut])); err == nil {
			t.Errorf("decode accepted a table truncated at %d of %d bytes", cut, len(raw))
		}
	}
	if _, err := decode(gz(t, append(append([]byte{}, raw...), 0))); err == nil {
		t.Error("decode accepted trailing bytes")
	}
}

func mustGunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

// TestGeneratorDeterministic builds the table twice from the WordNet files and compares the
// bytes with each other and with the committed table.bin.gz.
func TestGeneratorDeterministic(t *testing.T) {
	const dir = "/usr/share/wordnet"
	if _, err := os.Stat(filepath.Join(dir, "data.noun")); err != nil {
		t.Skipf("generator input missing: %s/data.noun not found (apt-get install wordnet-base to check the table's determinism)", dir)
	}
	a, err := wnbuild.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wnbuild.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two generator runs produced different bytes")
	}
	if !bytes.Equal(a, tableGz) {
		t.Fatal("committed table.bin.gz differs from the generator's output: run go generate ./internal/lexicon")
	}
	if _, err := wnbuild.Build(t.TempDir()); err == nil || !strings.Contains(err.Error(), "wordnet-base") {
		t.Errorf("Build on an empty folder: err = %v, want one that names wordnet-base", err)
	}
}

func BenchmarkExpand(b *testing.B) {
	get()
	words := []string{"car", "invoice", "meeting", "went", "discount", "reservation", "cars", "zzxqv"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		Expand(words[i%len(words)])
	}
}

func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(tableGz); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadRetained reports the heap the decoded table keeps.
func BenchmarkLoadRetained(b *testing.B) {
	var keep []*table
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tb, err := decode(tableGz)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		keep = append(keep[:0], tb)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-retained")
	}
	_ = keep
}

// TestConcurrentUse: the first load and lookups may race from many goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	want := terms(Expand("invoice"))
	done := make(chan []string)
	for range 8 {
		go func() { done <- terms(Expand("invoice")) }()
	}
	for range 8 {
		if got := <-done; !slices.Equal(got, want) {
			t.Errorf("concurrent Expand = %v, want %v", got, want)
		}
	}
}

func TestNarrower(t *testing.T) {
	has := func(rs []Related, term string) bool {
		for _, r := range rs {
			if r.Term == term {
				return true
			}
		}
		return false
	}
	ex := Narrower("excursion")
	if !has(ex, "field trip") {
		t.Errorf("Narrower(excursion) = %v, want field trip among them", ex)
	}
	if has(Expand("excursion"), "field trip") {
		t.Errorf("Expand(excursion) holds the hyponym field trip; Expand should leave hyponyms out")
	}
	j := Narrower("journalist")
	if !has(j, "columnist") {
		t.Errorf("Narrower(journalist) = %v, want columnist", j)
	}
	if has(j, "cooke") || has(j, "alistair cooke") {
		t.Errorf("Narrower(journalist) = %v holds an instance (a named person)", j)
	}
	if len(j) > MaxNarrower {
		t.Errorf("Narrower(journalist) has %d terms, cap %d", len(j), MaxNarrower)
	}
	for _, r := range j {
		if r.Weight <= 0 || r.Weight > narrowerFactor {
			t.Errorf("Narrower(journalist) term %v: weight outside (0, %v]", r, narrowerFactor)
		}
	}
	if got := Narrower("qwxzzy"); got != nil {
		t.Errorf("Narrower(unknown) = %v, want nil", got)
	}
	if a, b := Narrower("worker"), Narrower("worker"); len(a) != len(b) || (len(a) > 0 && a[len(a)-1] != b[len(b)-1]) {
		t.Errorf("Narrower(worker) not deterministic")
	}
}

func TestSiblings(t *testing.T) {
	has := func(rs []Related, term string) bool {
		for _, r := range rs {
			if r.Term == term {
				return true
			}
		}
		return false
	}
	if s := Siblings("fender-bender"); !has(s, "accident") {
		t.Errorf("Siblings(fender-bender) = %v, want accident (hypernym two levels up)", s)
	}
	if s := Siblings("notebook computer"); !has(s, "laptop") {
		t.Errorf("Siblings(notebook computer) = %v, want laptop (co-hyponym)", s)
	}
	for _, r := range Siblings("truck") {
		if r.Term == "truck" || r.Weight <= 0 || r.Weight > siblingFactor {
			t.Errorf("Siblings(truck) term %v: the word itself or weight outside (0, %v]", r, siblingFactor)
		}
	}
	if got := Siblings("qwxzzy"); got != nil {
		t.Errorf("Siblings(unknown) = %v, want nil", got)
	}
}
