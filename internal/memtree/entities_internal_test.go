package memtree

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// extractEntitiesWhole is extractEntities as it was before fieldsWith: every regex
// over the whole text.
func extractEntitiesWhole(text string, add func(kind, surface string)) {
	if strings.IndexByte(text, '@') >= 0 {
		for _, m := range reEmail.FindAllString(text, -1) {
			add(EntityEmail, m)
		}
		for _, m := range reHandle.FindAllStringSubmatch(text, -1) {
			if h := strings.TrimRight(m[1], ".-"); len(h) >= 2 {
				add(EntityHandle, h)
			}
		}
	}
	if strings.Contains(text, "http") {
		for _, m := range reURL.FindAllString(text, -1) {
			if m = strings.TrimRight(m, ".,;:!?"); len(m) > len("https://") {
				add(EntityURL, m)
			}
		}
	}
	if strings.IndexByte(text, '#') >= 0 {
		for _, m := range reDiscord.FindAllStringSubmatch(text, -1) {
			add(EntityHandle, m[1])
		}
		for _, m := range reHashtag.FindAllStringSubmatch(text, -1) {
			add(EntityHashtag, m[1])
			add(EntityTopic, strings.ToLower(m[1]))
		}
	}
}

// TestExtractEntitiesByFields checks that running the regexes over the fields that
// hold their marker finds the same entities, in the same order, as running them over
// the whole text.
func TestExtractEntitiesByFields(t *testing.T) {
	texts := []string{
		"", "@", "#", "a@b.cd", "mail ana@example.com, or @ana_b (@bob.) #Travel #x1 (#tag) bob#1234 x#12345",
		"@ab @cd\t@ef\n#gh\r#ij\f@kl", "ana@ex.co@ex.org @@x ##y a.b-c@d-e.f.gh", "(@ab)(#cd) x(@ef",
		"ÉLODIE@exämple.com @ünïcode #ünï x\u00a0@nbsp \u212a@k.example", "see https://x.example/@a#b and @ann",
		"name.with.dots#0001 and ab#1234#5678 @a1 @_b__ @c.- #9no #a",
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "B", "z", "0", "9", "_", ".", "-", "@", "@", "#", "#", " ", " ", "\t", "\n", "\r", "\f", "\v",
		"(", ")", "%", "+", ",", "é", "\u00a0", "ſ", "http://", "ex.com", "1234"}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.Intn(40); n > 0; n-- {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	found := 0
	for _, text := range texts {
		var want, got []string
		extractEntitiesWhole(text, func(k, s string) { want = append(want, k+"="+s) })
		extractEntities(text, func(k, s string) { got = append(got, k+"="+s) })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("text %q: by fields %q, whole text %q", text, got, want)
		}
		found += len(want)
	}
	if found < 1000 {
		t.Fatalf("only %d entities in the test texts: the comparison proves little", found)
	}
}
