package ingest_test

// TestRealData is the evaluation over ../shared/realdata: export files that real
// tools and people wrote (see its README). It ingests each folder into its own store
// and compares what the store holds with what an independent reading of the files
// finds. The independent reading is written here, in package ingest_test, so it can
// only use the package's exported API (Run) and never its parsers: mail is read with
// net/mail, mime, mime/multipart, mime/quotedprintable and golang.org/x/text,
// Slack and Telegram with encoding/json, WhatsApp and documents line by line.
//
// Per folder:
//   - expected: the messages a person would see in the files (counting methods
//     below, at each expect* function);
//   - stored: the expected messages the store holds, counted from the refs of its
//     chunks of the folder's kind (email, chat or document; a mail stored as a
//     document does not count). For mail, an expected message with a Message-ID is
//     stored when a chunk cites that id; the messages without one are matched
//     against the stored refs that are no Message-ID found anywhere in the folder's
//     files (ingest synthesises those), so a split message or an embedded one
//     never makes up for a lost one. For chats and documents it is the number of
//     distinct refs, at most the number expected (a surplus is logged);
//   - own text: for each expected mail message, the longest line of the author's own
//     text (see ownText) must be in the text of a stored chunk citing the message
//     (compared without whitespace, which chunking and reflowing move); a message
//     whose own text this reading cannot determine is "not judged";
//   - ts<1980: chunks whose ts, ts_start or ts_end is before 1980 (0 included);
//   - named: the losses the summary names, per message: an error about a message
//     (Where set) names one, an error or skip about a whole file names the messages
//     expected in it.
//
// Targets, overall and per folder: >= 99 % of the messages stored, >= 97 % of the
// judged ones with their own text intact, no chunk dated before 1980, and every
// message not stored named (named >= expected - stored).
//
// OPENHUMAN_REALDATA=dir reads the files from dir instead of ../shared/realdata;
// OPENHUMAN_REALDATA_TABLE=path also writes the table there (Markdown);
// OPENHUMAN_REALDATA_VERBOSE=1 logs the messages expected in each file.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"

	"github.com/openhuman/openhuman-core/internal/ingest"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// realDataFolders are the folders evaluated, each with the kind of its messages.
var realDataFolders = []evalFolderSpec{
	{"mail/spamscope", "mail", ""},
	{"mail/nodemailer", "mail", ""},
	{"mail/mimekit", "mail", ""},
	{"mail/perceval/mbox", "mail", ""},
	{"mail/perceval/pipermail", "mail", ""},
	{"mail/perceval/hyperkitty", "mail", ""},
	{"mail/perceval/utils", "mail", ""},
	{"slack/houstondatavis", "slack", ""},
	{"slack/sev_export", "slack", ""},
	{"chat/telegram", "telegram", ""},
	{"chat/whatsapp", "whatsapp", ""},
	{"docs/obsidian-help", "docs", ""},
	{"docs/jekyll-posts", "docs", ""},
}

// evalFolderSpec is one folder evaluated: dir relative to ../shared/realdata (or
// absolute, for the fixtures this test writes), the kind of its messages, and the
// name the table gives it ("" = dir).
type evalFolderSpec struct{ dir, kind, name string }

// The targets.
const (
	targetStoredPct = 99.0
	targetIntactPct = 97.0
)

// expMsg is one message the independent reading expects in the store.
type expMsg struct {
	file string // absolute path of the file holding it
	id   string // Message-ID, lower case, without brackets ("" when none or not one)
	own  string // the longest line of its own text, whitespace removed ("" = not judged)
	why  string // why own is "" (for the log)
	// Documents: the ref ingest gives it (path relative to the folder), the title
	// and date its front matter or properties carry ("" and zero when none or
	// when this reading cannot tell).
	ref   string
	title string
	date  time.Time
	// chats: the author and time a person reads in the export (at set = judged):
	// the message is stored only when the store holds it with both
	author string
	ms     int64
	at     bool
}

// expectation is the independent reading of one folder.
type expectation struct {
	msgs     []expMsg
	perFile  map[string]int  // absolute path -> messages expected in it
	allIDs   map[string]bool // every Message-ID anywhere in the files (mail)
	excluded []string        // files not counted, with the reason
}

func (e *expectation) add(m expMsg) {
	e.msgs = append(e.msgs, m)
	e.perFile[m.file]++
}

// storeView is what the test reads back from a store.
type storeView struct {
	refs     map[string][]int // ref (lower case for mail) -> indexes into texts of the sources citing it
	texts    []string         // per source, its chunks' text in seq order, whitespace removed
	allTexts []int            // indexes of every source's text
	chunks   int
	before80 int
	// titles and times of documents by ref (their first chunk's).
	titles map[string]string
	times  map[string]int64
	// otherKinds counts the chunks of another kind than the one read
	otherKinds int
}

// row is one line of the table.
type row struct {
	folder                                    string
	expected, stored, judged, intact, before  int
	failures, skips, warnings, missing, named int
	seconds                                   float64
}

func pct(n, d int) float64 {
	if d == 0 {
		return 100
	}
	return 100 * float64(n) / float64(d)
}

func TestRealData(t *testing.T) {
	base := filepath.Join("..", "..", "..", "shared", "realdata")
	if d := os.Getenv("OPENHUMAN_REALDATA"); d != "" {
		base = d // a worktree that does not sit beside ../shared
	}
	folders := realDataFolders
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		t.Log("the real-data evaluation needs ../shared/realdata (beside the repository, or OPENHUMAN_REALDATA); it is not there: only the fixtures this test writes are evaluated")
		folders = nil
	}
	var rows []row
	var total row
	total.folder = "all"
	patterns := writePatternFolders(t)
	folders = append(append([]evalFolderSpec{}, folders...), fixtureFolders(t)...)
	for _, p := range patterns {
		folders = append(folders, evalFolderSpec{dir: p.dir, kind: p.kind, name: "patterns/" + filepath.Base(p.dir)})
	}
	for _, f := range folders {
		dir, err := filepath.Abs(filepath.Join(base, filepath.FromSlash(f.dir)))
		if filepath.IsAbs(f.dir) {
			dir, err = f.dir, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", f.dir, err)
			continue
		}
		name := f.dir
		if f.name != "" {
			name = f.name
		}
		r := evalFolder(t, name, dir, f.kind)
		rows = append(rows, r)
		total.expected += r.expected
		total.stored += r.stored
		total.judged += r.judged
		total.intact += r.intact
		total.before += r.before
		total.failures += r.failures
		total.skips += r.skips
		total.warnings += r.warnings
		total.missing += r.missing
		total.named += r.named
		total.seconds += r.seconds
	}
	table := renderTable(append(rows, total))
	t.Log("\n" + table)
	if p := os.Getenv("OPENHUMAN_REALDATA_TABLE"); p != "" {
		head := fmt.Sprintf("Real-data evaluation (TestRealData), %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
		if err := os.WriteFile(p, []byte(head+table), 0o644); err != nil {
			t.Errorf("write table: %v", err)
		}
	}
	for _, r := range append(rows, total) {
		if r.expected > 0 && pct(r.stored, r.expected) < targetStoredPct {
			t.Errorf("%s: %d of %d messages stored (%.1f %%), target %.0f %%", r.folder, r.stored, r.expected, pct(r.stored, r.expected), targetStoredPct)
		}
		if r.judged > 0 && pct(r.intact, r.judged) < targetIntactPct {
			t.Errorf("%s: own text intact in %d of %d judged messages (%.1f %%), target %.0f %%", r.folder, r.intact, r.judged, pct(r.intact, r.judged), targetIntactPct)
		}
		if r.before > 0 {
			t.Errorf("%s: %d chunks dated before 1980, target 0", r.folder, r.before)
		}
		if r.named < r.missing {
			t.Errorf("%s: %d messages not stored, only %d named in the summary's errors and skips", r.folder, r.missing, r.named)
		}
	}
}

func renderTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| folder | expected | stored | % stored | own text judged | intact | % intact | ts<1980 | failures | skips | warnings | missing | named | s |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		judged, intact, ipct := "-", "-", "-"
		if r.judged > 0 {
			judged, intact, ipct = fmt.Sprint(r.judged), fmt.Sprint(r.intact), fmt.Sprintf("%.1f", pct(r.intact, r.judged))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %s | %s | %s | %d | %d | %d | %d | %d | %d | %.1f |\n",
			r.folder, r.expected, r.stored, pct(r.stored, r.expected), judged, intact, ipct, r.before, r.failures, r.skips, r.warnings, r.missing, r.named, r.seconds)
	}
	return b.String()
}

// evalFolder ingests dir into a fresh store and compares it with the independent
// reading.
func evalFolder(t *testing.T, name, dir, kind string) row {
	t.Helper()
	var exp *expectation
	switch kind {
	case "mail":
		exp = expectMail(t, dir)
	case "slack":
		exp = expectSlack(t, dir)
	case "telegram":
		exp = expectTelegram(t, dir)
	case "whatsapp":
		exp = expectWhatsApp(t, dir)
	case "messenger", "googlechat", "fixture-whatsapp":
		exp = fixtureTruth[dir]
	default:
		exp = expectDocs(t, dir)
	}
	for _, x := range exp.excluded {
		t.Logf("%s: not counted: %s", name, x)
	}
	if os.Getenv("OPENHUMAN_REALDATA_VERBOSE") != "" {
		var files []string
		for f := range exp.perFile {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			t.Logf("%s: expected %d in %s", name, exp.perFile[f], filepath.Base(f))
		}
		for _, m := range exp.msgs {
			if m.own != "" {
				t.Logf("%s: own text of %s <%s>: %s", name, filepath.Base(m.file), m.id, clip(m.own, 120))
			}
		}
	}
	dbPath := filepath.Join(t.TempDir(), "memory_tree", "chunks.db")
	st, err := memtree.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	sum, err := ingest.Run(ctx, st, []string{dir}, ingest.Options{})
	secs := time.Since(start).Seconds()
	if cerr := st.Close(); cerr != nil {
		t.Errorf("%s: close store: %v", name, cerr)
	}
	if err != nil {
		t.Errorf("%s: ingest: %v", name, err)
	}
	if sum == nil {
		sum = &ingest.Summary{}
	}
	storeKind := map[string]string{"mail": memtree.KindEmail, "slack": memtree.KindChat, "telegram": memtree.KindChat,
		"whatsapp": memtree.KindChat, "messenger": memtree.KindChat, "googlechat": memtree.KindChat,
		"fixture-whatsapp": memtree.KindChat, "docs": memtree.KindDocument}[kind]
	sv := readStore(t, dbPath, storeKind, kind == "mail")
	r := row{folder: name, expected: len(exp.msgs), failures: sum.Failures, skips: sum.Skipped, warnings: sum.Warnings,
		before: sv.before80, seconds: secs}
	if storeKind == memtree.KindChat {
		// no silent fallback: a chat export stored as a document (or mail) is a defect
		if n := sv.otherKinds; n > 0 {
			t.Errorf("%s: %d chunks of another kind than chat: a chat export was read by the wrong reader", name, n)
		}
	}
	if _, ok := fixtureTruth[dir]; ok {
		// the fixtures' layouts are unambiguous: nothing is left to a guess
		for _, n := range sum.Notes {
			if strings.Contains(n.Error(), "guessed") || strings.Contains(n.Error(), "not valid") || strings.Contains(n.Error(), "not in this file's header layout") {
				t.Errorf("%s: %s", name, n.Error())
			}
		}
	}
	if kind == "mail" {
		r.stored, r.judged, r.intact = judgeMail(t, name, exp, sv)
	} else if judgedChat(exp) {
		r.stored, r.judged, r.intact = judgeChat(t, name, exp, dbPath)
	} else {
		r.stored = min(len(sv.refs), len(exp.msgs))
		if len(sv.refs) > len(exp.msgs) {
			t.Logf("%s: the store holds %d message refs, %d more than expected", name, len(sv.refs), len(sv.refs)-len(exp.msgs))
		}
	}
	if kind == "docs" {
		judgeDocMeta(t, name, exp, sv)
	}
	r.missing = max(0, r.expected-r.stored)
	r.named = namedLosses(sum, exp)
	for i, e := range sum.Errors {
		if i == 5 {
			t.Logf("%s: ... %d more errors", name, len(sum.Errors)-5)
			break
		}
		t.Logf("%s: error: %s", name, clip(e.Error(), 300))
	}
	for why, n := range sum.SkippedBy {
		t.Logf("%s: skipped %d: %s", name, n, why)
	}
	return r
}

// namedLosses counts the messages the summary names as not kept.
func namedLosses(sum *ingest.Summary, exp *expectation) int {
	n := 0
	fileCount := func(p string) int {
		abs, err := filepath.Abs(p)
		if err != nil {
			return 0
		}
		if c, ok := exp.perFile[abs]; ok {
			return c
		}
		// a folder named whole (a Slack export that could not be read)
		c := 0
		for f, k := range exp.perFile {
			if strings.HasPrefix(f, abs+string(filepath.Separator)) {
				c += k
			}
		}
		return c
	}
	for _, e := range sum.Errors {
		if e.Where != "" {
			n++
		} else {
			n += fileCount(e.Path)
		}
	}
	for _, s := range sum.Skips {
		n += fileCount(s.Path)
	}
	return n
}

// readStore reads the chunks of the given kind back from the store file (read-only).
func readStore(t *testing.T, path, kind string, lowerRefs bool) *storeView {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT kind, source_id, ts, ts_start, ts_end, title, text, source_refs_json FROM chunks ORDER BY source_id, seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sv := &storeView{refs: map[string][]int{}, titles: map[string]string{}, times: map[string]int64{}}
	cutoff := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var texts []strings.Builder
	srcIdx := map[string]int{}
	for rows.Next() {
		var k, sid, title, text, refsJSON string
		var ts, t0, t1 int64
		if err := rows.Scan(&k, &sid, &ts, &t0, &t1, &title, &text, &refsJSON); err != nil {
			t.Fatal(err)
		}
		sv.chunks++
		if ts < cutoff || t0 < cutoff || t1 < cutoff {
			sv.before80++
		}
		if k != kind {
			sv.otherKinds++
			continue
		}
		i, ok := srcIdx[k+"\x00"+sid]
		if !ok {
			i = len(texts)
			srcIdx[k+"\x00"+sid] = i
			texts = append(texts, strings.Builder{})
		}
		texts[i].WriteString(noSpace(text))
		var refs []string
		if err := json.Unmarshal([]byte(refsJSON), &refs); err != nil {
			t.Fatalf("chunk of %s: refs %q: %v", sid, refsJSON, err)
		}
		for _, r := range refs {
			if lowerRefs {
				r = strings.ToLower(r)
			}
			if _, ok := sv.titles[r]; !ok {
				sv.titles[r], sv.times[r] = title, t0
			}
			if l := sv.refs[r]; len(l) == 0 || l[len(l)-1] != i {
				sv.refs[r] = append(l, i)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		sv.texts = append(sv.texts, texts[i].String())
		sv.allTexts = append(sv.allTexts, i)
	}
	return sv
}

// noSpace removes every space character (and the invisible ones mail, HTML and
// chat exports carry, bidi marks included) for comparisons that line breaks,
// reflowing and chunking cannot upset.
func noSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == '\u00ad' || r == '\u200e' || r == '\u200f' {
			return -1
		}
		return r
	}, s)
}

// judgeMail counts the expected mail messages stored and, of those whose own text
// is known, the ones whose own text a chunk citing them holds.
func judgeMail(t *testing.T, name string, exp *expectation, sv *storeView) (stored, judged, intact int) {
	t.Helper()
	synthetic := map[string]bool{} // stored refs that are no Message-ID of the files
	for r := range sv.refs {
		if !exp.allIDs[r] {
			synthetic[r] = true
		}
	}
	noID := 0
	var lost, broken []string
	for _, m := range exp.msgs {
		srcs := sv.allTexts
		if m.id == "" {
			noID++
		} else if s, ok := sv.refs[m.id]; ok {
			stored++
			srcs = s
		} else {
			lost = append(lost, fmt.Sprintf("<%s> in %s", m.id, filepath.Base(m.file)))
			srcs = nil
		}
		if m.own == "" {
			continue
		}
		judged++
		found := false
		for _, i := range srcs {
			if strings.Contains(sv.texts[i], m.own) {
				found = true
				break
			}
		}
		if found {
			intact++
		} else if srcs != nil {
			broken = append(broken, fmt.Sprintf("%s <%s>: %.80q", filepath.Base(m.file), m.id, m.own))
		}
	}
	stored += min(noID, len(synthetic))
	if noID > len(synthetic) {
		lost = append(lost, fmt.Sprintf("%d of %d messages without a Message-ID", noID-len(synthetic), noID))
	}
	logSome(t, name+": not stored", lost)
	logSome(t, name+": own text not found", broken)
	notJudged := map[string][]string{}
	var whys []string
	for _, m := range exp.msgs {
		if m.own == "" {
			if notJudged[m.why] == nil {
				whys = append(whys, m.why)
			}
			notJudged[m.why] = append(notJudged[m.why], filepath.Base(m.file))
		}
	}
	for _, why := range whys {
		t.Logf("%s: own text not judged for %d (%s): %s", name, len(notJudged[why]), clip(why, 120), clip(strings.Join(notJudged[why], ", "), 300))
	}
	return stored, judged, intact
}

// clip shortens s to at most n bytes (at a rune boundary) for the log.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func logSome(t *testing.T, what string, l []string) {
	t.Helper()
	for i, s := range l {
		if i == 8 {
			t.Logf("%s: ... %d more", what, len(l)-8)
			return
		}
		t.Logf("%s: %s", what, s)
	}
}

// walkFiles lists the regular files under dir, in name order, leaving out hidden
// files and folders (ingest does not read them either).
func walkFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func newExpectation() *expectation {
	return &expectation{perFile: map[string]int{}, allIDs: map[string]bool{}}
}

// ---- mail ----

// Mail counting. Every file under the folder is read:
//   - files that are not RFC 5322 text are not mail and not counted: HTML and XML
//     (Pipermail's index pages, Bugzilla exports in perceval/utils), JSON, images,
//     and binary files (spamscope's mail_outlook_1 is an Outlook .msg, an OLE
//     compound file that no RFC 5322 reader reads);
//   - an mbox is a file whose first line (after a byte-order mark) is a "From "
//     line; its messages start at each "From " line that begins a line and is
//     followed by a header block (header lines up to a blank line) holding one of
//     From:, To:, Date:, Subject:, Message-ID:, Received:, Return-Path:,
//     MIME-Version:. That admits separators with no blank line before them
//     (MimeKit's content-length.mbox.txt: 29 messages) and refuses unescaped body
//     lines ("From Russia with love" followed by "Year: 1963" in unmunged.mbox.txt:
//     2 messages, not 3);
//   - any other file is one message when its first header block holds From:,
//     Subject:, Date: or Message-ID: (a bounce's headers without them, or a saved
//     MHTML page, is no message a mail client lists);
//   - messages are counted once per Message-ID: test suites keep the same message
//     in several files (an .eml and its .anonymized.eml), which a store keeps once.
func expectMail(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	seen := map[string]bool{}
	for _, p := range walkFiles(t, dir) {
		switch strings.ToLower(filepath.Ext(p)) {
		case ".html", ".htm", ".xml", ".json", ".png", ".jpg", ".gif", ".pdf":
			e.excluded = append(e.excluded, filepath.Base(p)+" (not mail: "+strings.ToLower(filepath.Ext(p))+" file)")
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		if strings.EqualFold(filepath.Ext(p), ".emlx") {
			// Apple Mail: a byte-count line, the message, a property list.
			first, rest, _ := bytes.Cut(b, []byte("\n"))
			if n, err := strconv.Atoi(strings.TrimSpace(string(first))); err == nil && n <= len(rest) {
				b = rest[:n]
			}
		}
		if bytes.HasPrefix(b, []byte{0xd0, 0xcf, 0x11, 0xe0}) || bytes.IndexByte(b[:min(len(b), 8192)], 0) >= 0 {
			e.excluded = append(e.excluded, filepath.Base(p)+" (binary, not RFC 5322 text: an Outlook .msg or similar)")
			continue
		}
		for _, id := range reAnyMsgID.FindAllSubmatch(b, -1) {
			if v := msgID(string(id[1])); v != "" {
				e.allIDs[v] = true
			}
		}
		msgs := splitMbox(b)
		if msgs == nil {
			if !hasMailHeader(b) {
				e.excluded = append(e.excluded, filepath.Base(p)+" (no From:, Subject:, Date: or Message-ID: header: not a message)")
				continue
			}
			msgs = [][]byte{b}
		}
		for _, raw := range msgs {
			m := expMsg{file: p, id: headerMsgID(raw)}
			if m.id != "" {
				if seen[m.id] {
					continue
				}
				seen[m.id] = true
			}
			m.own, m.why = ownText(raw)
			e.add(m)
		}
	}
	return e
}

var (
	reAnyMsgID  = regexp.MustCompile(`(?im)^Message-ID:[ \t]*(.*)$`)
	reHeaderLn  = regexp.MustCompile(`^[!-9;-~]+:`)
	reKeyHeader = regexp.MustCompile(`(?i)^(From|To|Date|Subject|Message-ID|Received|Return-Path|MIME-Version):`)
	reMsgID     = regexp.MustCompile(`^<?([^<>\s@]+@[^<>\s@]+)>?$`)
)

// msgID returns a Message-ID header value without brackets, lower case, or "" when
// it is not one.
func msgID(v string) string {
	m := reMsgID.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}

// lines splits b into lines without their line endings.
func lines(b []byte) []string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	return strings.Split(s, "\n")
}

// headerBlock returns the header lines at the start of ls (up to the first blank
// line) and whether every one is a header line or a continuation.
func headerBlock(ls []string) ([]string, bool) {
	for i, l := range ls {
		if strings.TrimSpace(l) == "" {
			return ls[:i], i > 0
		}
		if i == 0 && (l[0] == ' ' || l[0] == '\t') {
			return nil, false
		}
		if l[0] != ' ' && l[0] != '\t' && !reHeaderLn.MatchString(l) {
			return ls[:i], false
		}
		if i == 500 {
			return ls[:i], false
		}
	}
	return ls, len(ls) > 0
}

// splitMbox returns the messages of an mbox (nil when b is no mbox), without their
// "From " lines.
func splitMbox(b []byte) [][]byte {
	ls := lines(b)
	first := 0
	for first < len(ls) && strings.TrimSpace(ls[first]) == "" {
		first++
	}
	if first == len(ls) || !strings.HasPrefix(ls[first], "From ") {
		return nil
	}
	var starts []int
	for i := first; i < len(ls); i++ {
		if !strings.HasPrefix(ls[i], "From ") {
			continue
		}
		hb, ok := headerBlock(ls[i+1:])
		if !ok {
			continue
		}
		for _, h := range hb {
			if reKeyHeader.MatchString(h) {
				starts = append(starts, i)
				break
			}
		}
	}
	if len(starts) == 0 || starts[0] != first {
		return nil
	}
	var out [][]byte
	for k, s := range starts {
		end := len(ls)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		out = append(out, []byte(strings.Join(ls[s+1:end], "\n")))
	}
	return out
}

// hasMailHeader reports whether the first header block of b (lenient: its lines up
// to the first blank line) holds From:, Subject:, Date: or Message-ID:.
func hasMailHeader(b []byte) bool {
	for _, l := range lines(b) {
		if strings.TrimSpace(l) == "" {
			return false
		}
		if regexp.MustCompile(`(?i)^(From|Subject|Date|Message-ID):`).MatchString(l) {
			return true
		}
	}
	return false
}

// headerMsgID returns the Message-ID of the message's own header block.
func headerMsgID(raw []byte) string {
	hb, _ := headerBlock(lines(raw))
	for i, l := range hb {
		if len(l) > 11 && strings.EqualFold(l[:11], "message-id:") {
			v := l[11:]
			for j := i + 1; j < len(hb) && (hb[j][0] == ' ' || hb[j][0] == '\t'); j++ {
				v += hb[j]
			}
			return msgID(v)
		}
	}
	return ""
}

// ownText returns the longest line of the author's own text of one message,
// whitespace removed, or "" and why not. The text is the first text/plain part that
// is no attachment (in a multipart/alternative the plain part, else the HTML one;
// never a part inside an attached message/rfc822), decoded from its transfer
// encoding and charset. Its own lines are those before a signature ("-- "), a
// quoted-message header (-----Original Message-----, a forwarded-message line, a
// line of underscores that opens a list footer or an Outlook reply header), the
// "-------------- next part --------------" note a Mailman archive puts where it
// removed an attachment, or a PGP signature, that are not quoted (">") and not an attribution ("On ... wrote:"), nor
// "Sent from my ...". In HTML, the text runs between tags, outside <head>, <style>,
// <script> and <blockquote>, before a reply header.
func ownText(raw []byte) (string, string) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", "net/mail cannot read the header: " + err.Error()
	}
	text, isHTML, why := pickPart(msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0)
	if why != "" {
		return "", why
	}
	var line string
	if isHTML {
		line = longestHTMLText(text)
	} else {
		line = longestOwnLine(text)
	}
	if line = noSpace(line); line == "" {
		return "", "no own text (empty body or attachments only)"
	}
	return line, ""
}

// pickPart returns the decoded text of the part that holds the message's text.
func pickPart(ctype, cte string, body io.Reader, depth int) (text string, isHTML bool, why string) {
	if depth > 10 {
		return "", false, "multiparts nested too deep"
	}
	if strings.TrimSpace(ctype) == "" {
		ctype = "text/plain"
	}
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		return "", false, "unreadable Content-Type " + ctype
	}
	switch {
	case strings.HasPrefix(mt, "multipart/"):
		if params["boundary"] == "" {
			return "", false, "multipart without a boundary"
		}
		mr := multipart.NewReader(body, params["boundary"])
		var htmlText string
		haveHTML := false
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				break // the end, or a multipart that never closes: what was read counts
			}
			if d, _, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition")); d == "attachment" {
				continue
			}
			pt, ph, pwhy := pickPart(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, depth+1)
			if pwhy != "" {
				if pwhy == "no text part" {
					continue
				}
				return "", false, pwhy
			}
			if !ph {
				return pt, false, ""
			}
			if !haveHTML {
				htmlText, haveHTML = pt, true
				if mt != "multipart/alternative" {
					return htmlText, true, ""
				}
			}
		}
		if haveHTML {
			return htmlText, true, ""
		}
		return "", false, "no text part"
	case mt == "text/plain" || mt == "text/html":
		b, err := decodeCTE(cte, body)
		if err != nil {
			return "", false, err.Error()
		}
		s, why := decodeCharset(params["charset"], b)
		if why != "" {
			return "", false, why
		}
		return s, mt == "text/html", ""
	default:
		return "", false, "no text part"
	}
}

// decodeCTE undoes a Content-Transfer-Encoding.
func decodeCTE(cte string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("body unreadable: %v", err)
	} // a part of a multipart that never closes ends with the file: what was read counts
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "", "7bit", "8bit", "binary":
		return b, nil
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(b)))
		if err != nil {
			return nil, fmt.Errorf("quoted-printable does not decode: %v", err)
		}
		return out, nil
	case "base64":
		clean := strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return -1
			}
			return r
		}, string(b))
		out, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			if out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "=")); err != nil {
				return nil, fmt.Errorf("base64 does not decode: %v", err)
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown transfer encoding %q", cte)
	}
}

// DecodeCharset decodes b from charset; "" and why when the text cannot be known:
// an unknown charset, bytes the charset does not hold, undeclared 8-bit bytes that
// are no UTF-8, or a single-byte charset declared on bytes that are UTF-8 (a
// mislabel a reader may repair either way).
func decodeCharset(cs string, b []byte) (string, string) {
	cs = strings.ToLower(strings.Trim(strings.TrimSpace(cs), `"'`))
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii && !strings.Contains(cs, "2022") && !strings.Contains(cs, "utf-7") && !strings.Contains(cs, "utf-16") {
		return string(b), ""
	}
	switch cs {
	case "", "us-ascii", "ascii", "utf-8", "utf8":
		if utf8.Valid(b) {
			return string(b), ""
		}
		return "", fmt.Sprintf("bytes that are not UTF-8 under charset %q", cs)
	}
	var enc encoding.Encoding
	enc, err := htmlindex.Get(cs)
	if err != nil || enc == nil {
		if enc, err = ianaindex.MIME.Encoding(cs); err != nil || enc == nil {
			return "", fmt.Sprintf("unknown charset %q", cs)
		}
	}
	if utf8.Valid(b) && !strings.HasPrefix(cs, "utf") && !strings.Contains(cs, "2022") && !strings.Contains(cs, "gb") &&
		!strings.Contains(cs, "big5") && !strings.Contains(cs, "jis") && !strings.Contains(cs, "euc") && !strings.Contains(cs, "ks_c") {
		return "", fmt.Sprintf("charset %q declared on UTF-8 bytes", cs)
	}
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil || bytes.ContainsRune(out, utf8.RuneError) {
		return "", fmt.Sprintf("bytes that charset %q does not hold", cs)
	}
	return string(out), ""
}

var (
	// reAttribution is the line a reply puts above the quoted message: "On <date>,
	// <name> wrote:" (and its translations), or Gmail's "2015-11-21 13:05 GMT+01:00
	// Name <addr>:".
	reAttribution = regexp.MustCompile(`(?i)^(on\b.*|.*\b)(wrote|writes|schrieb|a écrit|escribió|scrisse):\s*$|^\d{4}-\d{2}-\d{2}.*>\s*:$`)
	reSentFrom    = regexp.MustCompile(`(?i)^[-\s]*sent from my `)
	reStopLine    = regexp.MustCompile(`(?i)^(-{2,}\s*original message\s*-{2,}|-{2,}\s*forwarded message\s*-{2,}|-{2,}\s*next part\s*-{2,}|begin forwarded message:|_{10,}|-----begin pgp signature-----)`)
)

// longestOwnLine returns the longest own line of a plain-text body.
func longestOwnLine(text string) string {
	best := ""
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if l == "-- " || l == "--" || l == "-- \r" {
			break
		}
		s := strings.TrimSpace(l)
		if reStopLine.MatchString(s) {
			break
		}
		if strings.HasPrefix(s, ">") || reAttribution.MatchString(s) || reSentFrom.MatchString(s) ||
			strings.HasPrefix(s, "-----BEGIN PGP SIGNED MESSAGE") || strings.HasPrefix(s, "Hash: ") || !hasWord(s) {
			continue
		}
		if utf8.RuneCountInString(s) > utf8.RuneCountInString(best) {
			best = s
		}
	}
	return best
}

// hasWord reports whether s holds a letter or digit (a rule of dashes is no text).
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

var reTag = regexp.MustCompile(`(?s)<!--.*?-->|<[^>]*>`)

// inlineTags are the HTML elements inside a run of text: a text run goes on across
// them ("This is an <b>html</b> body."). Every other tag, <a> included (a link may
// be rendered with its address), ends the run.
var inlineTags = map[string]bool{"b": true, "i": true, "u": true, "em": true, "strong": true, "span": true, "font": true,
	"small": true, "big": true, "sub": true, "sup": true, "code": true, "tt": true, "s": true, "strike": true, "mark": true}

// longestHTMLText returns the longest run of text of an HTML body.
func longestHTMLText(h string) string {
	best := ""
	skip := map[string]int{} // open head/style/script/blockquote/title elements
	var run strings.Builder
	// flush ends the current run; false once it is a reply header, where own text ends.
	flush := func() bool {
		s := strings.Join(strings.Fields(html.UnescapeString(run.String())), " ")
		run.Reset()
		if reStopLine.MatchString(s) || s == "From:" || strings.HasPrefix(s, "From: ") && strings.Contains(s, "Sent:") {
			return false
		}
		if !reAttribution.MatchString(s) && !reSentFrom.MatchString(s) && hasWord(s) && utf8.RuneCountInString(s) > utf8.RuneCountInString(best) {
			best = s
		}
		return true
	}
	pos := 0
	for _, loc := range reTag.FindAllStringIndex(h, -1) {
		if skip["head"]+skip["style"]+skip["script"]+skip["blockquote"]+skip["title"] == 0 {
			run.WriteString(h[pos:loc[0]])
		}
		pos = loc[1]
		tag := strings.ToLower(h[loc[0]:loc[1]])
		if strings.HasPrefix(tag, "<!--") {
			continue
		}
		if strings.Contains(tag, "gmail_quote") || strings.Contains(tag, "divrplyfwdmsg") || strings.Contains(tag, "moz-cite-prefix") {
			flush()
			return best
		}
		name := strings.TrimLeft(tag, "</")
		if i := strings.IndexAny(name, " \t\r\n/>"); i >= 0 {
			name = name[:i]
		}
		if inlineTags[name] {
			continue
		}
		if !flush() {
			return best
		}
		switch name {
		case "head", "style", "script", "blockquote", "title":
			if strings.HasPrefix(tag, "</") {
				if skip[name] > 0 {
					skip[name]--
				}
			} else if !strings.HasSuffix(tag, "/>") {
				skip[name]++
			}
		}
	}
	if skip["head"]+skip["style"]+skip["script"]+skip["blockquote"]+skip["title"] == 0 {
		run.WriteString(h[pos:])
	}
	flush()
	return best
}

// ---- Slack ----

// slackNoise are the subtypes of channel events, not messages a person wrote.
var slackNoise = map[string]bool{
	"channel_join": true, "channel_leave": true, "channel_topic": true, "channel_purpose": true, "channel_name": true,
	"channel_archive": true, "channel_unarchive": true, "group_join": true, "group_leave": true, "group_topic": true,
	"group_purpose": true, "group_name": true, "group_archive": true, "group_unarchive": true, "pinned_item": true,
	"unpinned_item": true, "bot_add": true, "bot_remove": true, "bot_enable": true, "bot_disable": true,
	"channel_convert_to_private": true, "tombstone": true, "message_deleted": true, "reminder_add": true,
}

// Slack counting: each channel folder's day files (JSON arrays) hold the messages;
// a message counts when it has a "ts", a subtype not in slackNoise, and some
// content: non-blank text, an attachment with text, fallback, pretext or title, a
// file ("file" or "files"), or a file comment. A (channel, ts) counts once.
// users.json, channels.json and integration_logs.json are no messages.
func expectSlack(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	seen := map[string]bool{}
	for _, p := range walkFiles(t, dir) {
		if filepath.Dir(p) == dir || filepath.Ext(p) != ".json" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []struct {
			Ts          string `json:"ts"`
			Subtype     string `json:"subtype"`
			Text        string `json:"text"`
			Attachments []struct {
				Text, Fallback, Pretext, Title string
			} `json:"attachments"`
			File    json.RawMessage   `json:"file"`
			Files   []json.RawMessage `json:"files"`
			Comment *struct {
				Comment string `json:"comment"`
			} `json:"comment"`
		}
		if err := json.Unmarshal(b, &msgs); err != nil {
			e.excluded = append(e.excluded, filepath.Base(p)+" (no JSON array of messages)")
			continue
		}
		channel := filepath.Base(filepath.Dir(p))
		for _, m := range msgs {
			if m.Ts == "" || slackNoise[m.Subtype] || seen[channel+"\x00"+m.Ts] {
				continue
			}
			content := strings.TrimSpace(m.Text) != "" || len(m.Files) > 0 || (len(m.File) > 0 && string(m.File) != "null") ||
				(m.Comment != nil && strings.TrimSpace(m.Comment.Comment) != "")
			for _, a := range m.Attachments {
				if strings.TrimSpace(a.Text+a.Fallback+a.Pretext+a.Title) != "" {
					content = true
				}
			}
			if content {
				seen[channel+"\x00"+m.Ts] = true
				e.add(expMsg{file: p})
			}
		}
	}
	return e
}

// ---- Telegram ----

// Telegram counting: the messages of type "message" (service events, such as a
// group's creation or a member joining, are not) of every chat in a Telegram
// Desktop JSON export (one chat's result.json, or a full export's chats.list).
// Each is judged by its author ("from", else "from_id"), its time (date_unixtime,
// else "date" as local time) and the longest line of its text.
func expectTelegram(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	type chat struct {
		Messages []struct {
			Type     string          `json:"type"`
			From     *string         `json:"from"`
			FromID   string          `json:"from_id"`
			Date     string          `json:"date"`
			DateUnix string          `json:"date_unixtime"`
			Text     json.RawMessage `json:"text"`
		} `json:"messages"`
	}
	for _, p := range walkFiles(t, dir) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var export struct {
			chat
			Chats struct {
				List []chat `json:"list"`
			} `json:"chats"`
		}
		if filepath.Ext(p) != ".json" || json.Unmarshal(b, &export) != nil {
			e.excluded = append(e.excluded, filepath.Base(p)+" (not a Telegram JSON export)")
			continue
		}
		for _, c := range append(export.Chats.List, export.chat) {
			for _, m := range c.Messages {
				if m.Type != "message" {
					continue
				}
				x := expMsg{file: p, at: true, author: m.FromID}
				if m.From != nil && strings.TrimSpace(*m.From) != "" {
					x.author = strings.TrimSpace(*m.From)
				}
				var secs int64
				if _, err := fmt.Sscanf(m.DateUnix, "%d", &secs); err == nil && secs > 0 {
					x.ms = secs * 1000
				} else if tm, err := time.ParseInLocation("2006-01-02T15:04:05", m.Date, time.Local); err == nil {
					x.ms = tm.UnixMilli()
				} else {
					x.at = false
				}
				var text string
				var parts []json.RawMessage
				if json.Unmarshal(m.Text, &text) != nil && json.Unmarshal(m.Text, &parts) == nil {
					for _, part := range parts {
						var s string
						var ent struct {
							Text string `json:"text"`
						}
						if json.Unmarshal(part, &s) == nil {
							text += s
						} else if json.Unmarshal(part, &ent) == nil {
							text += ent.Text
						}
					}
				}
				x.own = longestLine(text)
				if x.own == "" {
					x.why = "no text (media only)"
				}
				e.add(x)
			}
		}
	}
	return e
}

// longestLine is the longest line of s, whitespace removed ("" when s has none).
func longestLine(s string) string {
	best := ""
	for _, l := range strings.Split(s, "\n") {
		if l = noSpace(l); utf8.RuneCountInString(l) > utf8.RuneCountInString(best) {
			best = l
		}
	}
	return best
}

// ---- WhatsApp ----

// reWhatsApp is a message's first line in a WhatsApp "Export chat" file, Android
// ("06.08.2016, 13:23 - Name: text") or iOS ("[15-01-20 02:22:56] Name: text"),
// any date order and separator, 12- or 24-hour clock; reWhatsAppStamp is the
// start of any header line (messages and system lines).
var (
	reWhatsApp      = regexp.MustCompile(`^\[?(\d{1,4})[./-](\d{1,2})[./-](\d{1,4}),? (\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?(?:\s?([APap])\.?\s?[Mm]\.?)?\]?(?: -)? ([^:]+): (.*)$`)
	reWhatsAppStamp = regexp.MustCompile(`^\[?\d{1,4}[./-]\d{1,2}[./-]\d{1,4},? \d{1,2}[:.]\d{2}`)
)

// WhatsApp counting: lines that start with a message's date-and-time header
// followed by "Name: " (continuation lines of a multi-line message start with
// neither; system lines such as "X joined" have no "Name: "). The end-to-end
// encryption notice some exports put under the group's name ("Pokemon Chat:
// Messages and calls are end-to-end encrypted...") is a system line, not counted.
// Each is judged by its author, its time (local; day/month order from a number
// over 12 in the file, day first when none) and the longest line of its text
// (continuation lines included).
func expectWhatsApp(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	for _, p := range walkFiles(t, dir) {
		if strings.ToLower(filepath.Ext(p)) != ".txt" {
			e.excluded = append(e.excluded, filepath.Base(p)+" (not a WhatsApp text export)")
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
		monthFirst := false
		for _, l := range lines {
			if m := reWhatsApp.FindStringSubmatch(strings.TrimLeft(l, "\ufeff\u200e\u200f")); m != nil && len(m[1]) <= 2 {
				var a, b int
				fmt.Sscanf(m[1], "%d", &a)
				fmt.Sscanf(m[2], "%d", &b)
				if a > 12 {
					monthFirst = false
					break
				}
				if b > 12 {
					monthFirst = true
				}
			}
		}
		var cur *expMsg
		var text []string
		flush := func() {
			if cur != nil {
				cur.own = longestLine(strings.Join(text, "\n"))
				e.add(*cur)
			}
			cur, text = nil, nil
		}
		for _, raw := range lines {
			l := strings.TrimLeft(raw, "\ufeff\u200e\u200f")
			m := reWhatsApp.FindStringSubmatch(l)
			if m == nil && reWhatsAppStamp.MatchString(l) {
				flush() // a system line
				continue
			}
			if m == nil {
				if cur != nil {
					text = append(text, strings.ReplaceAll(raw, "\u200e", ""))
				}
				continue
			}
			flush()
			if strings.HasPrefix(m[9], "Messages and calls are end-to-end encrypted") {
				continue
			}
			n := make([]int, 7)
			for i := 1; i <= 6; i++ {
				fmt.Sscanf(m[i], "%d", &n[i])
			}
			d, mo, y := n[1], n[2], n[3]
			switch {
			case len(m[1]) == 4:
				y, mo, d = n[1], n[2], n[3]
			case monthFirst:
				d, mo = n[2], n[1]
			}
			if y < 100 {
				y += 2000
			}
			h := n[4]
			if m[7] != "" {
				h %= 12
				if strings.EqualFold(m[7], "p") {
					h += 12
				}
			}
			cur = &expMsg{file: p, at: true, author: strings.TrimSpace(m[8]),
				ms: time.Date(y, time.Month(mo), d, h, n[5], n[6], 0, time.Local).UnixMilli()}
			text = []string{m[9]}
		}
		flush()
	}
	return e
}

// ---- documents ----

// Document counting: the Markdown, text and Org files (.md .markdown .mdown .mkd
// .txt .text .org) whose body, after a leading "---" or "+++" front-matter block,
// is not blank, and each <note> of an Evernote export (.enex). A Joplin raw-export
// file whose footer says it is no note (type_ other than 1: a notebook, tag or
// resource record) is no document. The vault's attachments (images, icons, CSS,
// JSON) are no documents.
//
// Titles and dates, where the file carries them: YAML "title:" (quoted or a
// block scalar) and "date:", TOML "title =" and "date =", Org "#+TITLE:" and
// "#+DATE:", Logseq "title::", a Joplin note's first line and created_time, an
// Evernote note's <title> and <created>.
func expectDocs(t *testing.T, dir string) *expectation {
	t.Helper()
	e := newExpectation()
	other := 0
	for _, p := range walkFiles(t, dir) {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		ext := strings.ToLower(filepath.Ext(p))
		switch ext {
		case ".md", ".markdown", ".mdown", ".mkd", ".txt", ".text", ".org":
		case ".enex":
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range reEnexNote.FindAllSubmatch(b, -1) {
				x := expMsg{file: p, ref: fmt.Sprintf("%s#%d", rel, i+1)}
				if tm := reEnexTitle.FindSubmatch(m[1]); tm != nil {
					x.title = html.UnescapeString(strings.TrimSpace(string(tm[1])))
				}
				if cm := reEnexCreated.FindSubmatch(m[1]); cm != nil {
					x.date, _ = time.Parse("20060102T150405Z", string(cm[1]))
				}
				e.add(x)
			}
			continue
		default:
			other++
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(strings.TrimPrefix(string(b), "\ufeff"), "\r\n", "\n")
		x := expMsg{file: p, ref: rel}
		var head string
		for _, fence := range []string{"---", "+++"} {
			if !strings.HasPrefix(s, fence+"\n") {
				continue
			}
			rest := s[4:]
			for off := 0; off < len(rest); {
				end := strings.IndexByte(rest[off:], '\n')
				if end < 0 {
					end = len(rest) - off
				}
				if l := strings.TrimRight(rest[off:off+end], " \t"); l == fence || fence == "---" && l == "..." {
					head, s = rest[:off], rest[min(len(rest), off+end+1):]
					break
				}
				off += end + 1
			}
		}
		x.title, x.date = docHeadMeta(head)
		if m := regexp.MustCompile(`(?m)^type_: (\d+)\s*$`).FindStringSubmatch(s); m != nil && regexp.MustCompile(`(?m)^id: [0-9a-f]{32}$`).MatchString(s) {
			if m[1] != "1" {
				e.excluded = append(e.excluded, filepath.Base(p)+" (a Joplin record that is no note)")
				continue
			}
			first, _, _ := strings.Cut(strings.TrimLeft(s, "\n"), "\n")
			x.title = strings.TrimSpace(first)
			if cm := regexp.MustCompile(`(?m)^created_time: (\S+)$`).FindStringSubmatch(s); cm != nil {
				x.date, _ = time.Parse(time.RFC3339Nano, cm[1])
			}
		}
		if ext == ".org" {
			if m := regexp.MustCompile(`(?mi)^#\+title:[ \t]*(.+)$`).FindStringSubmatch(s); m != nil {
				x.title = strings.TrimSpace(m[1])
			}
		}
		if m := regexp.MustCompile(`^-? ?title:: (.+)\n`).FindStringSubmatch(strings.TrimLeft(s, "\n")); m != nil && x.title == "" {
			x.title = strings.TrimSpace(m[1])
		}
		if strings.TrimSpace(s) == "" {
			e.excluded = append(e.excluded, filepath.Base(p)+" (no text after the front matter)")
			continue
		}
		e.add(x)
	}
	if other > 0 {
		e.excluded = append(e.excluded, fmt.Sprintf("%d attachments (images, icons, CSS, JSON): no documents", other))
	}
	return e
}

var (
	reEnexNote    = regexp.MustCompile(`(?s)<note>(.*?)</note>`)
	reEnexTitle   = regexp.MustCompile(`(?s)<title>(.*?)</title>`)
	reEnexCreated = regexp.MustCompile(`<created>(\d{8}T\d{6}Z)</created>`)
)

// docHeadMeta reads the title and date of a front-matter block (YAML or TOML).
func docHeadMeta(head string) (title string, date time.Time) {
	ls := strings.Split(head, "\n")
	for i, l := range ls {
		if strings.HasPrefix(l, "[") {
			break // a TOML table: its keys are not the page's
		}
		k, v, ok := strings.Cut(l, ":")
		sep := ":"
		if k2, v2, ok2 := strings.Cut(l, "="); ok2 && (!ok || len(k2) < len(k)) {
			k, v, ok, sep = k2, v2, true, "="
		}
		if !ok || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "[") {
			continue
		}
		key := strings.TrimSpace(k)
		v = strings.TrimSpace(v)
		switch key {
		case "title":
			if sep == ":" && (strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">")) {
				var parts []string
				for _, n := range ls[i+1:] {
					if n != "" && n[0] != ' ' {
						break
					}
					if n = strings.TrimSpace(n); n != "" {
						parts = append(parts, n)
					}
				}
				title = strings.Join(parts, " ")
				continue
			}
			title = unquoteScalar(v)
		case "date":
			d := unquoteScalar(v)
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05 -07:00", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
				if x, err := time.Parse(layout, d); err == nil {
					date = x
					break
				}
			}
		}
	}
	return title, date
}

// unquoteScalar removes a YAML or TOML value's quotes (and a plain value's
// trailing comment).
func unquoteScalar(v string) string {
	switch {
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		return strings.ReplaceAll(strings.ReplaceAll(v[1:len(v)-1], `\"`, `"`), `\\`, `\`)
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// judgeDocMeta checks the titles and dates documents carry: >= 99 % of the
// documents with a front-matter (or property) title stored under it, and of
// those with a date, stored at it.
func judgeDocMeta(t *testing.T, name string, exp *expectation, sv *storeView) {
	t.Helper()
	titled, titleOK, dated, dateOK := 0, 0, 0, 0
	var bad []string
	for _, m := range exp.msgs {
		got, stored := sv.titles[m.ref]
		if m.title != "" {
			titled++
			if stored && got == m.title {
				titleOK++
			} else if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%s: title %q, want %q", m.ref, got, m.title))
			}
		}
		if !m.date.IsZero() {
			dated++
			if stored && sv.times[m.ref] == m.date.UnixMilli() {
				dateOK++
			} else if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%s: time %s, want %s", m.ref, time.UnixMilli(sv.times[m.ref]).UTC(), m.date.UTC()))
			}
		}
	}
	t.Logf("%s: %d of %d carried titles kept, %d of %d carried dates kept", name, titleOK, titled, dateOK, dated)
	if pct(titleOK, titled) < targetStoredPct || pct(dateOK, dated) < targetStoredPct {
		t.Errorf("%s: %d of %d carried titles and %d of %d carried dates kept, target %.0f %%: %s", name, titleOK, titled, dateOK, dated, targetStoredPct, strings.Join(bad, "; "))
	}
}
