package lexicon

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode"
)

// Floors a little under the measured coverage (see TestCorpusCoverage's log): the fraction of
// paraphrase/related queries with a query word whose expansion occurs in a relevant item.
const (
	coverageFloorParaphrase = 0.70
	coverageFloorRelated    = 0.45
	coverageFloorBoth       = 0.58
)

func sharedData(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	repoRoot := filepath.Join(filepath.Dir(file), "..", "..")
	return filepath.Join(repoRoot, "..", "shared", "data")
}

// genCorpus writes the default corpus into a temp folder, or skips when the shared data is absent.
func genCorpus(t *testing.T) string {
	t.Helper()
	data := sharedData(t)
	if _, err := os.Stat(filepath.Join(data, "gencorpus", "go.mod")); err != nil {
		t.Skipf("corpus-based coverage check not run: shared data generator missing at %s (%v)", data, err)
	}
	out := t.TempDir()
	cmd := exec.Command("go", "run", "-C", filepath.Join(data, "gencorpus"), ".", "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gencorpus: %v\n%s", err, b)
	}
	return out
}

var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or of on in at to for from by with about before after
		during into over under is are was were be been it its this that these those my our your their
		his her what when where who how which not no new`) {
		stop[w] = true
	}
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-'
	})
}

// itemText holds the words of one item and its text with single spaces between words.
type itemText struct {
	words  map[string]bool
	joined string
}

func newItemText(s string) itemText {
	toks := tokens(s)
	it := itemText{words: map[string]bool{}, joined: " " + strings.Join(toks, " ") + " "}
	for _, tk := range toks {
		it.words[tk] = true
		for _, b := range Base(tk) {
			it.words[b] = true
		}
	}
	return it
}

func (it itemText) has(term string) bool {
	if !strings.Contains(term, " ") {
		return it.words[term]
	}
	return strings.Contains(it.joined, " "+term+" ")
}

// mailBodies returns Message-ID → headers and decoded text parts of every message in an mbox/eml.
func mailBodies(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	var msgs [][]byte
	if bytes.HasPrefix(raw, []byte("From ")) {
		for _, part := range bytes.Split(raw, []byte("\nFrom ")) {
			if i := bytes.IndexByte(part, '\n'); i >= 0 {
				msgs = append(msgs, part[i+1:])
			}
		}
	} else {
		msgs = [][]byte{raw}
	}
	out := map[string]string{}
	for _, m := range msgs {
		msg, err := mail.ReadMessage(bytes.NewReader(m))
		if err != nil {
			continue
		}
		id := strings.Trim(msg.Header.Get("Message-Id"), "<> ")
		var sb strings.Builder
		dec := new(mime.WordDecoder)
		subj, _ := dec.DecodeHeader(msg.Header.Get("Subject"))
		sb.WriteString(subj + "\n")
		walkPart(&sb, textproto(msg.Header), msg.Body, 0)
		out[id] = sb.String()
	}
	return out
}

type hdr interface{ Get(string) string }

func textproto(h mail.Header) hdr { return h }

func walkPart(sb *strings.Builder, h hdr, body io.Reader, depth int) {
	if depth > 8 {
		return
	}
	ct, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		ct = "text/plain"
	}
	if strings.HasPrefix(ct, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				return
			}
			walkPart(sb, p.Header, p, depth+1)
		}
	}
	if !strings.HasPrefix(ct, "text/") {
		return
	}
	var r io.Reader = body
	switch strings.ToLower(h.Get("Content-Transfer-Encoding")) {
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &newlineStripper{r: body})
	case "quoted-printable":
		r = quotedprintable.NewReader(body)
	}
	b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	sb.Write(b)
	sb.WriteByte('\n')
}

type newlineStripper struct{ r io.Reader }

func (n *newlineStripper) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	j := 0
	for _, c := range p[:k] {
		if c != '\n' && c != '\r' {
			p[j] = c
			j++
		}
	}
	return j, err
}

// loadItems returns source_ref → text for every item of the corpus.
func loadItems(t *testing.T, dir string) map[string]itemText {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "eval", "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mails := map[string]map[string]string{}
	jsonMsgs := map[string]map[string]string{} // path → ref → text
	out := map[string]itemText{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var it struct{ Source_ref, Kind, Path string }
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("items.jsonl: %v", err)
		}
		path := filepath.Join(dir, filepath.FromSlash(it.Path))
		var text string
		switch it.Kind {
		case "email":
			if mails[path] == nil {
				mails[path] = mailBodies(t, path)
			}
			text = mails[path][it.Source_ref]
		case "slack", "chat":
			if jsonMsgs[path] == nil {
				jsonMsgs[path] = chatTexts(t, path, it.Kind)
			}
			text = jsonMsgs[path][it.Source_ref]
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text = it.Path + "\n" + string(b)
		}
		if text == "" {
			t.Fatalf("no text found for item %s in %s", it.Source_ref, it.Path)
		}
		out[it.Source_ref] = newItemText(text)
	}
	return out
}

func chatTexts(t *testing.T, path, kind string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if kind == "slack" {
		var msgs []struct{ Text, Ts string }
		if err := json.Unmarshal(b, &msgs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ch := filepath.Base(filepath.Dir(path))
		for _, m := range msgs {
			out["slack:"+ch+":"+m.Ts] = m.Text
		}
		return out
	}
	var batch struct {
		Messages []struct {
			Text      string
			SourceRef string `json:"source_ref"`
		}
	}
	if err := json.Unmarshal(b, &batch); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, m := range batch.Messages {
		out[m.SourceRef] = m.Text
	}
	return out
}

// queryTerms are the content words of a query plus adjacent pairs WordNet knows as collocations.
func queryTerms(q string) []string {
	var words []string
	for _, w := range tokens(q) {
		if !stop[w] {
			words = append(words, w)
		}
	}
	terms := append([]string(nil), words...)
	for i := 0; i+1 < len(words); i++ {
		if Base(words[i]+"_"+words[i+1]) != nil {
			terms = append(terms, words[i]+"_"+words[i+1])
		}
	}
	return terms
}

// TestCorpusCoverage measures how many paraphrase/related queries have a query word whose
// expansion occurs in one of the query's relevant items (and, for comparison, anywhere in the corpus).
func TestCorpusCoverage(t *testing.T) {
	dir := genCorpus(t)
	items := loadItems(t, dir)
	vocab := itemText{words: map[string]bool{}}
	var all strings.Builder
	for _, it := range items {
		for w := range it.words {
			vocab.words[w] = true
		}
		all.WriteString(it.joined)
	}
	vocab.joined = all.String()

	f, err := os.Open(filepath.Join(dir, "eval", "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type tally struct{ n, relHit, vocabHit int }
	res := map[string]*tally{"paraphrase": {}, "related": {}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct {
			ID, Kind, Query string
			Relevant        []string
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("queries.jsonl: %v", err)
		}
		tl := res[q.Kind]
		if tl == nil {
			continue
		}
		tl.n++
		relHit, vocabHit := "", ""
		for _, term := range queryTerms(q.Query) {
			for _, r := range Expand(term) {
				if vocabHit == "" && vocab.has(r.Term) {
					vocabHit = term + "→" + r.Term
				}
				for _, ref := range q.Relevant {
					it, ok := items[ref]
					if !ok {
						t.Fatalf("query %s: relevant item %s not in items.jsonl", q.ID, ref)
					}
					if relHit == "" && it.has(r.Term) {
						relHit = term + "→" + r.Term
					}
				}
			}
		}
		if relHit != "" {
			tl.relHit++
		}
		if vocabHit != "" {
			tl.vocabHit++
		}
		if testing.Verbose() {
			t.Logf("%s %-10s %-45q relevant:%-28s corpus:%s", q.ID, q.Kind, q.Query, relHit, vocabHit)
		}
	}
	p, r := res["paraphrase"], res["related"]
	if p.n == 0 || r.n == 0 {
		t.Fatalf("no paraphrase (%d) or related (%d) queries in the corpus", p.n, r.n)
	}
	frac := func(a, b int) float64 { return float64(a) / float64(b) }
	both := frac(p.relHit+r.relHit, p.n+r.n)
	t.Logf("expansion reaches a relevant item: paraphrase %d/%d = %.2f, related %d/%d = %.2f, both %.2f",
		p.relHit, p.n, frac(p.relHit, p.n), r.relHit, r.n, frac(r.relHit, r.n), both)
	t.Logf("expansion occurs anywhere in the corpus: paraphrase %d/%d = %.2f, related %d/%d = %.2f",
		p.vocabHit, p.n, frac(p.vocabHit, p.n), r.vocabHit, r.n, frac(r.vocabHit, r.n))
	if got := frac(p.relHit, p.n); got < coverageFloorParaphrase {
		t.Errorf("paraphrase coverage %.2f < floor %.2f", got, coverageFloorParaphrase)
	}
	if got := frac(r.relHit, r.n); got < coverageFloorRelated {
		t.Errorf("related coverage %.2f < floor %.2f", got, coverageFloorRelated)
	}
	if both < coverageFloorBoth {
		t.Errorf("paraphrase+related coverage %.2f < floor %.2f", both, coverageFloorBoth)
	}
}
