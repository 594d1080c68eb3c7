package memtree

import (
	"fmt"
	"math/rand"
	"sort"
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
			addHashtag(m[1], add)
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
		"name.with.dots#0001 and ab#1234#5678 @a1 @_b__ @c.- #9no #a", "#project/alpha #a/ #ab/ (#x/y/z) c#d/e",
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "B", "z", "0", "9", "_", ".", "-", "/", "@", "@", "#", "#", " ", " ", "\t", "\n", "\r", "\f", "\v",
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

// docEntities returns the sorted canonical ids a document chunk of text mentions.
func docEntities(text string) []string {
	in := &SourceInput{Kind: KindDocument, Messages: []MessageInput{{Ref: "a.md", Text: text}}}
	var ids []string
	for id := range chunkEntities(in, text, map[int]bool{0: true}) {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// TestDocumentEntities checks Obsidian [[wikilinks]] and #tags in document chunks:
// each link names its page as a topic, tags keep their nesting, and neither is read
// in code, inline code, link destinations or headings.
func TestDocumentEntities(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"wikilink forms", "See [[Page One]], [[Other Page|the label]] and [[Third#Some heading]] or [[Fourth#^block1]].",
			"topic:fourth topic:other page topic:page one topic:third"},
		{"md suffix, folder, table pipe", "[[Notes/Plan.md]] | [[Budget\\|label]] |", "topic:budget topic:notes/plan"},
		{"same-page heading and attachments", "[[#Only a heading]] ![[photo.PNG]] [[report.pdf]] ![[Embedded note]]", "topic:embedded note"},
		{"logseq tag link", "#[[Multi Word]] and **[[Bold Link]]**", "topic:bold link topic:multi word"},
		{"never across lines", "[[broken\nlink]] then [[a [[Inner]]", "topic:inner"},
		{"nested tag kept whole", "Filed under #project/alpha and #Work/", "hashtag:project/alpha hashtag:work topic:project/alpha topic:work"},
		{"headings are not tags", "# Heading\n\n## Sub heading\n\ntext #real", "hashtag:real topic:real"},
		{"url fragment and link destination", "https://example.com/page#section and [jump](#usage) and [x](Page.md#part) (#paren)",
			"hashtag:paren topic:paren url:https://example.com/page#section"},
		{"inline code", "Use `#notatag` or ``[[Not a link]]`` but #yes", "hashtag:yes topic:yes"},
		{"fenced code", "Intro #before\n\n```md\n#intag [[InCode]]\n```\n\n~~~\n#tilde\n~~~\n\nAfter #after [[Out]]",
			"hashtag:after hashtag:before topic:after topic:before topic:out"},
		{"quoted fence", "> ```\n> #inquote\n> ```\n> #prose", "hashtag:prose topic:prose"},
		// A chunk that starts inside a block opened in the chunk before: the bare first
		// fence closes it, since reading it as an opening would put "```js" inside a block.
		{"chunk starts inside code", "#incode [[CodeLink]]\n```\n\n#between\n\n```js\n#injs\n```\n#end",
			"hashtag:between hashtag:end topic:between topic:end"},
		{"unclosed fence ends the prose", "#open\n```python\n#rest [[Rest]]", "hashtag:open topic:open"},
		{"addresses in code still count", "```\nmail ana@example.com\n```", "email:ana@example.com"},
	}
	for _, c := range cases {
		if got := strings.Join(docEntities(c.text), " "); got != c.want {
			t.Errorf("%s: %q\n got %s\nwant %s", c.name, c.text, got, c.want)
		}
	}
	// Other kinds keep reading the whole text (a chat's [[x]] is no page link).
	chat := &SourceInput{Kind: KindChat, Messages: []MessageInput{{Text: "```\n#code [[x]]\n```"}}}
	if ents := chunkEntities(chat, chat.Messages[0].Text, map[int]bool{}); ents["hashtag:code"].Kind == "" || ents["topic:x"].Kind != "" {
		t.Errorf("chat entities must be read from the whole text")
	}
}

// TestProseOfKeepsOffsets checks that blanking code keeps the text's length and
// line structure, and returns text itself when there is nothing to blank.
func TestProseOfKeepsOffsets(t *testing.T) {
	for _, text := range []string{"plain #tag [[x]]", "a `b` c\n```\nd\n```\n[e](#f) é`ü`"} {
		p := proseOf(text)
		if len(p) != len(text) || strings.Count(p, "\n") != strings.Count(text, "\n") {
			t.Errorf("proseOf(%q) = %q: length or lines changed", text, p)
		}
	}
	if got := proseOf("a [b] c"); got != "a [b] c" {
		t.Errorf("proseOf without code = %q", got)
	}
}
