package readkit

import (
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// reBlankRuns finds runs of blank lines.
var reBlankRuns = lazyre.New(`\n{3,}`)

// HTMLToText turns an HTML body into the text a mail client shows: only text
// content is kept (never attribute values, comments, head, style or script), quoted
// blockquotes are dropped (they are history), block elements become line breaks,
// list items "- ", and links keep their target as "label (url)". It uses the HTML5
// tokenizer, so unclosed tags, stray '<' and '>' inside attributes and broken
// markup read as a browser reads them.
func HTMLToText(s string) string {
	var b strings.Builder
	b.Grow(len(s) / 2)
	z := xhtml.NewTokenizer(strings.NewReader(s))
	skip := 0       // depth inside head/style/script/title/template
	quoteDepth := 0 // depth inside blockquote
	var href string
	var linkText strings.Builder
	inLink := false
	emit := func(t string) {
		if quoteDepth > 0 || skip > 0 {
			return
		}
		if inLink {
			linkText.WriteString(t)
			return
		}
		b.WriteString(t)
	}
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			break
		}
		switch tt {
		case xhtml.TextToken:
			emit(collapseSpaces(string(z.Text())))
		case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
			nameB, hasAttr := z.TagName()
			name := string(nameB)
			closing := tt == xhtml.EndTagToken
			switch name {
			case "head", "style", "script", "title", "template", "noscript":
				if tt == xhtml.StartTagToken {
					skip++
				} else if closing && skip > 0 {
					skip--
				}
			case "blockquote":
				if closing {
					if quoteDepth > 0 {
						quoteDepth--
					}
				} else if tt == xhtml.StartTagToken {
					quoteDepth++
				}
			case "br":
				emit("\n")
			case "p", "div", "table", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "pre", "section", "article", "header", "footer":
				emit("\n\n")
			case "tr":
				emit("\n")
			case "td", "th":
				emit(" ")
			case "li":
				if !closing {
					emit("\n- ")
				}
			case "a":
				if quoteDepth > 0 || skip > 0 {
					continue
				}
				if !closing {
					href = ""
					for hasAttr {
						var k, v []byte
						k, v, hasAttr = z.TagAttr()
						if string(k) == "href" {
							href = string(v)
						}
					}
					inLink = true
					linkText.Reset()
				} else if inLink {
					inLink = false
					label := strings.TrimSpace(linkText.String())
					u := strings.TrimSpace(href)
					switch {
					case (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) && label != "" && label != u:
						b.WriteString(label + " (" + u + ")")
					case label == "" && (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")):
						b.WriteString(u)
					default:
						b.WriteString(label)
					}
				}
			}
		}
	}
	if inLink {
		b.WriteString(linkText.String())
	}
	text := strings.ReplaceAll(b.String(), "\u00a0", " ")
	lines := strings.Split(text, "\n")
	for k, l := range lines {
		lines[k] = strings.TrimSpace(l)
	}
	text = strings.Join(lines, "\n")
	text = reBlankRuns.ReplaceAllString(text, "\n\n")
	return strings.TrimSpace(text)
}

// collapseSpaces folds runs of whitespace (including newlines) into one space, as
// HTML rendering does.
func collapseSpaces(s string) string {
	if strings.TrimSpace(s) == "" {
		if s == "" {
			return ""
		}
		return " "
	}
	f := strings.Fields(s)
	out := strings.Join(f, " ")
	if s[0] == ' ' || s[0] == '\n' || s[0] == '\t' {
		out = " " + out
	}
	if last := s[len(s)-1]; last == ' ' || last == '\n' || last == '\t' {
		out += " "
	}
	return out
}
