package chat

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// DiscordChatExporter's HTML export: div.chatlog__message-group, each the
// messages one author wrote in a row. The first message's header names the
// author (span.chatlog__author, or span.chatlog__author-name in exports before
// 2022; its title is the full name with the discriminator) and its time
// (span.chatlog__timestamp); the others carry their own time in the title of
// div.chatlog__short-timestamp. Each message (an element with data-message-id)
// has its text in div.chatlog__content, its attachments as links, the message
// it answers in the onclick of span.chatlog__reference-link. Dates are in the
// export's culture and read together (localeTimes).

// dcHTMLDetect reports whether an HTML file is a DiscordChatExporter export.
func dcHTMLDetect(p string, head []byte) bool {
	ext := strings.ToLower(filepath.Ext(p))
	if ext != ".html" && ext != ".htm" {
		return false
	}
	return bytes.Contains(head, []byte("chatlog")) && (bytes.Contains(head, []byte("preamble")) || bytes.Contains(head, []byte("DiscordChatExporter")))
}

// dcHTMLAll lists the elements under n with class c, in document order.
func dcHTMLAll(n *xhtml.Node, c string, out []*xhtml.Node) []*xhtml.Node {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type != xhtml.ElementNode {
			continue
		}
		if tgHTMLHasClass(ch, c) {
			out = append(out, ch)
			continue
		}
		out = dcHTMLAll(ch, c, out)
	}
	return out
}

// dcHTMLMessages lists the elements under n that carry data-message-id (not
// descending into one).
func dcHTMLMessages(n *xhtml.Node, out []*xhtml.Node) []*xhtml.Node {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type != xhtml.ElementNode {
			continue
		}
		if tgHTMLAttr(ch, "data-message-id") != "" {
			out = append(out, ch)
			continue
		}
		out = dcHTMLMessages(ch, out)
	}
	return out
}

func dcReadHTML(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	b, err := readkit.ReadFileLimited(path)
	if err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: err})
		return
	}
	doc, err := xhtml.Parse(bytes.NewReader(b))
	if err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("DiscordChatExporter HTML: %w", err)})
		return
	}
	var pre []string
	for _, e := range dcHTMLAll(doc, "preamble__entry", nil) {
		if t := tgHTMLText(e); t != "" {
			pre = append(pre, t)
		}
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	chanID := base
	if m := reDCChannelID.FindStringSubmatch(base); m != nil {
		chanID = m[1]
	}
	title := strings.TrimSpace(reDCChannelID.ReplaceAllString(base, ""))
	if len(pre) >= 2 {
		title = pre[0] + " " + pre[1]
	}
	type dcm struct {
		id, author, addr, stamp, text, replyTo string
		atts                                   []abi.Attachment
	}
	var ms []dcm
	for gi, g := range dcHTMLAll(doc, "chatlog__message-group", nil) {
		if gi%256 == 0 && ctx.Err() != nil {
			return
		}
		author, addr, groupStamp := "", "", ""
		for _, c := range []string{"chatlog__author", "chatlog__author-name"} {
			if a := tgHTMLFind(g, c); a != nil {
				author, addr = tgHTMLText(a), tgHTMLAttr(a, "title")
				break
			}
		}
		if ts := tgHTMLFind(g, "chatlog__timestamp"); ts != nil {
			groupStamp = tgHTMLText(ts)
		}
		for _, m := range dcHTMLMessages(g, nil) {
			x := dcm{id: tgHTMLAttr(m, "data-message-id"), author: author, addr: readkit.FirstNonEmpty(addr, author), stamp: groupStamp}
			if st := tgHTMLFind(m, "chatlog__short-timestamp"); st != nil {
				x.stamp = readkit.FirstNonEmpty(tgHTMLAttr(st, "title"), tgHTMLText(st))
			} else if ts := tgHTMLFind(m, "chatlog__timestamp"); ts != nil {
				x.stamp = readkit.FirstNonEmpty(tgHTMLAttr(ts, "title"), tgHTMLText(ts))
			}
			if c := tgHTMLFind(m, "chatlog__content"); c != nil {
				x.text = tgHTMLText(c)
				x.text = strings.TrimSpace(strings.TrimSuffix(x.text, "(edited)"))
			}
			if r := tgHTMLFind(m, "chatlog__reference-link"); r != nil {
				oc := tgHTMLAttr(r, "onclick")
				if i := strings.LastIndex(oc, "'"); i > 0 {
					if j := strings.LastIndex(oc[:i], "'"); j >= 0 {
						x.replyTo = oc[j+1 : i]
					}
				}
			}
			for _, a := range dcHTMLAll(m, "chatlog__attachment", nil) {
				var walk func(*xhtml.Node) string
				walk = func(n *xhtml.Node) string {
					if n.Type == xhtml.ElementNode {
						for _, k := range []string{"href", "src"} {
							if v := tgHTMLAttr(n, k); v != "" {
								return v
							}
						}
					}
					for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
						if v := walk(ch); v != "" {
							return v
						}
					}
					return ""
				}
				if name := readkit.ExportFileName(dcURLBase(walk(a))); name != "" {
					x.atts = append(x.atts, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
					if x.text == "" {
						x.text = "[attachment " + name + "]"
					}
				}
			}
			ms = append(ms, x)
		}
	}
	stamps := make([]string, len(ms))
	for i, m := range ms {
		stamps[i] = m.stamp
	}
	times, errs, notes := localeTimes(stamps)
	for _, n := range notes {
		rep.Warn(path, "", n)
	}
	var res []memtree.MessageInput
	for i, m := range ms {
		if errs[i] != nil {
			rep.Fail(readkit.FileError{Path: path, Where: "message " + m.id, Err: fmt.Errorf("date %q: %w: message not ingested", m.stamp, errs[i])})
			continue
		}
		if m.text == "" {
			continue
		}
		mi := memtree.MessageInput{Ref: "discord:" + chanID + ":" + m.id, Author: m.author, AuthorAddr: m.addr, TimestampMS: times[i], Text: m.text, Attachments: m.atts}
		if m.replyTo != "" {
			mi.ReplyTo = "discord:" + chanID + ":" + m.replyTo
		}
		res = append(res, mi)
	}
	if len(res) == 0 {
		return
	}
	readkit.WriteChat(out, path, "discord", "0/"+chanID, title, res)
}
