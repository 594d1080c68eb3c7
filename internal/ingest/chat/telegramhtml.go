package chat

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Telegram Desktop's HTML export ("Export chat history", format HTML): a chat's
// messages.html, messages2.html, ... each a div.history of div.message. A
// div.message.default holds a div.body with the time in the title of
// div.date.details ("05.01.2026 10:00:00 UTC+01:00"; older exports without the
// zone, read as local time), the author in div.from_name (a "joined" message
// continues the author before it), the text in div.text, the answered message in
// div.reply_to ("#go_to_message120"), media in div.media_wrap (their files named
// as attachments), and a forward in div.forwarded.body (its own from_name is the
// original author). div.message.service lines (dates, joins) are counted. The chat
// is named by the page header; the conversation by that name.

// tgHTMLDetect reports whether an .html file is a Telegram Desktop export page.
func tgHTMLDetect(p string, head []byte) bool {
	ext := strings.ToLower(filepath.Ext(p))
	if ext != ".html" && ext != ".htm" {
		return false
	}
	return bytes.Contains(head, []byte(`class="page_wrap"`)) && (bytes.Contains(head, []byte(`class="history"`)) || bytes.Contains(head, []byte(`class="message `)))
}

func tgHTMLHasClass(n *xhtml.Node, c string) bool {
	for _, a := range n.Attr {
		if a.Key == "class" {
			for _, f := range strings.Fields(a.Val) {
				if f == c {
					return true
				}
			}
		}
	}
	return false
}

func tgHTMLAttr(n *xhtml.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

// tgHTMLChild is the first element child of n with class c (nil when none).
func tgHTMLChild(n *xhtml.Node, c string) *xhtml.Node {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == xhtml.ElementNode && tgHTMLHasClass(ch, c) {
			return ch
		}
	}
	return nil
}

// tgHTMLFind is the first element under n (depth first) with class c.
func tgHTMLFind(n *xhtml.Node, c string) *xhtml.Node {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type != xhtml.ElementNode {
			continue
		}
		if tgHTMLHasClass(ch, c) {
			return ch
		}
		if f := tgHTMLFind(ch, c); f != nil {
			return f
		}
	}
	return nil
}

// tgHTMLText is the text of n: <br> as a newline, runs of spaces of the
// export's indentation collapsed, each line trimmed.
func tgHTMLText(n *xhtml.Node) string {
	var b strings.Builder
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		switch n.Type {
		case xhtml.TextNode:
			b.WriteString(strings.Join(strings.Fields(n.Data), " "))
			if strings.HasSuffix(n.Data, " ") || strings.HasSuffix(n.Data, "\n") {
				b.WriteByte(' ')
			}
			return
		case xhtml.ElementNode:
			if n.Data == "br" {
				b.WriteByte('\n')
				return
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(n)
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// tgHTMLTime reads a date's title: "05.01.2026 10:00:00 UTC+01:00" or, in older
// exports, "05.01.2026 10:00:00" (local).
func tgHTMLTime(s string) (int64, bool, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse("02.01.2006 15:04:05 UTC-07:00", s); err == nil {
		return t.UnixMilli(), false, nil
	}
	t, err := time.ParseInLocation("02.01.2006 15:04:05", s, time.Local)
	if err != nil {
		return 0, false, fmt.Errorf("date %q is not \"dd.mm.yyyy hh:mm:ss\"", s)
	}
	return t.UnixMilli(), true, nil
}

// tgReadHTML reads one page of a Telegram HTML export.
func tgReadHTML(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	b, err := readkit.ReadFileLimited(path)
	if err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: err})
		return
	}
	doc, err := xhtml.Parse(bytes.NewReader(b))
	if err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("Telegram HTML export: %w", err)})
		return
	}
	title := ""
	if h := tgHTMLFind(doc, "page_header"); h != nil {
		title = tgHTMLText(h)
	}
	conv := readkit.FirstNonEmpty(title, tgFileChatName(strings.TrimSuffix(path, filepath.Base(path))+"result.json"))
	if title == "" {
		title = conv
	}
	hist := tgHTMLFind(doc, "history")
	if hist == nil {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("no div.history: not a Telegram chat page, nothing ingested")})
		return
	}
	var msgs []memtree.MessageInput
	lastAuthor := ""
	service, warnedLocal := 0, false
	for n, i := hist.FirstChild, 0; n != nil; n = n.NextSibling {
		if n.Type != xhtml.ElementNode || !tgHTMLHasClass(n, "message") {
			continue
		}
		i++
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		if tgHTMLHasClass(n, "service") {
			service++
			continue
		}
		id := strings.TrimPrefix(tgHTMLAttr(n, "id"), "message")
		where := "message " + id
		body := tgHTMLChild(n, "body")
		if body == nil {
			continue
		}
		date := tgHTMLChild(body, "date")
		if date == nil {
			rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("message without a date: not ingested")})
			continue
		}
		ms, local, err := tgHTMLTime(tgHTMLAttr(date, "title"))
		if err == nil && !readkit.ChatTimeOK(ms) {
			err = fmt.Errorf("date %q is before 1980", tgHTMLAttr(date, "title"))
		}
		if err != nil {
			rep.Fail(readkit.FileError{Path: path, Where: where, Err: fmt.Errorf("%w: message not ingested", err)})
			continue
		}
		if local && !warnedLocal {
			warnedLocal = true
			rep.Warn(path, where, "message dates read as local time of this machine ("+tgLocalZone()+"): this export's dates carry no zone")
		}
		author := lastAuthor
		if f := tgHTMLChild(body, "from_name"); f != nil && !tgHTMLHasClass(n, "joined") || f != nil && author == "" {
			author = tgHTMLText(f)
		}
		lastAuthor = author
		var parts []string
		if fw := tgHTMLChild(body, "forwarded"); fw != nil {
			from := ""
			if f := tgHTMLChild(fw, "from_name"); f != nil {
				// its own text, without the original's date in a span
				for ch := f.FirstChild; ch != nil; ch = ch.NextSibling {
					if ch.Type == xhtml.TextNode {
						from += " " + strings.Join(strings.Fields(ch.Data), " ")
					}
				}
				from = strings.TrimSpace(from)
			}
			if t := tgHTMLChild(fw, "text"); t != nil {
				parts = append(parts, strings.TrimSpace("(forwarded from "+from+") "+tgHTMLText(t)))
			}
		}
		if t := tgHTMLChild(body, "text"); t != nil {
			if s := tgHTMLText(t); s != "" {
				parts = append(parts, s)
			}
		}
		var atts []abi.Attachment
		if mw := tgHTMLChild(body, "media_wrap"); mw != nil {
			var walk func(*xhtml.Node)
			walk = func(x *xhtml.Node) {
				if x.Type == xhtml.ElementNode && x.Data == "a" {
					if href := tgHTMLAttr(x, "href"); href != "" && !strings.HasPrefix(href, "#") && !strings.Contains(href, "://") {
						name := readkit.ExportFileName(href)
						atts = append(atts, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
						if len(parts) == 0 {
							parts = append(parts, "["+strings.TrimSuffix(filepath.Base(filepath.Dir(href)), "s")+" "+name+"]")
						}
						return
					}
				}
				for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
					walk(ch)
				}
			}
			walk(mw)
		}
		text := strings.Join(parts, "\n")
		if text == "" && len(atts) == 0 {
			continue
		}
		mi := memtree.MessageInput{Ref: "telegram:" + conv + ":" + id, Author: author, TimestampMS: ms, Text: text, Attachments: atts}
		if rt := tgHTMLChild(body, "reply_to"); rt != nil {
			var walk func(*xhtml.Node)
			walk = func(x *xhtml.Node) {
				if x.Type == xhtml.ElementNode && x.Data == "a" && mi.ReplyTo == "" {
					if h := tgHTMLAttr(x, "href"); strings.Contains(h, "#go_to_message") {
						if _, err := strconv.Atoi(h[strings.LastIndex(h, "message")+len("message"):]); err == nil {
							mi.ReplyTo = "telegram:" + conv + ":" + h[strings.LastIndex(h, "message")+len("message"):]
						}
					}
				}
				for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
					walk(ch)
				}
			}
			walk(rt)
		}
		msgs = append(msgs, mi)
	}
	rep.WarnCount(path, service, "%d service line(s) (dates, joins, pinned messages) not stored as messages")
	if len(msgs) == 0 {
		return
	}
	readkit.WriteChat(out, path, "telegram", conv, title, msgs)
}
