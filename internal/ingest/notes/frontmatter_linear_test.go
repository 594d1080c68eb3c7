package notes

import (
	"strings"
	"testing"
)

// An array or multi-line string in TOML front matter that never closes takes
// the rest of the block as its value, read once (issue 39, finding 3: each
// continuation line rescanned the whole value, 500 KB took 37 s). The title
// before it is kept and the body after the block is the note's.
func TestTOMLFrontMatterUnclosedValues(t *testing.T) {
	for _, open := range []string{`tags = ["a",`, `description = """starts`, `tags = [ # a comment`} {
		var b strings.Builder
		b.WriteString("+++\ntitle = \"Kept\"\n" + open + "\n")
		for i := 0; i < 20000; i++ {
			b.WriteString(`"item ] [ \" ''' quoted",` + "\n")
		}
		b.WriteString("+++\nThe body.\n")
		fm, body := splitTOMLFrontMatter(b.String())
		if fm.title != "Kept" || body != "The body.\n" {
			t.Errorf("%s: title %q, body %.40q", open, fm.title, body)
		}
	}
	fm, _ := splitTOMLFrontMatter("+++\ntags = [\"x\", # note\n\"y\"]\ntitle = \"after\"\n+++\n")
	if fm.title != "" {
		t.Errorf("a comment inside an open array ends the value as before; got title %q", fm.title)
	}
	fm, _ = splitTOMLFrontMatter("+++\ntags = [\"a\\\"]\",\n \"b\"]\ntitle = \"T\"\n+++\n")
	if fm.title != "T" || len(fm.tags) != 2 {
		t.Errorf("an escaped quote across lines: title %q tags %q", fm.title, fm.tags)
	}
}

// BenchmarkTOMLFrontMatterUnclosed is finding 3's input: 500 KB of an array
// that never closes.
func BenchmarkTOMLFrontMatterUnclosed(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("+++\ntags = [\n")
	for sb.Len() < 500<<10 {
		sb.WriteString("\"x\",\n")
	}
	sb.WriteString("+++\nbody\n")
	text := sb.String()
	for b.Loop() {
		splitTOMLFrontMatter(text)
	}
}
