package mail

import (
	"strings"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

var (
	reOnWrote      = lazyre.New(`(?i)^\s*(on\s.+\s(wrote|schrieb|a écrit|escribió|skrev)\s*:|.{0,80}<[^>@\s]+@[^>\s]+>\s+(wrote|schrieb)\s*:)\s*$`)
	reOnStart      = lazyre.New(`(?i)^\s*on\s.{6,}`)
	reWroteEnd     = lazyre.New(`(?i)(wrote|schrieb|a écrit|escribió|skrev)\s*:\s*$`)
	reOriginal     = lazyre.New(`(?i)^\s*-{2,}\s*(original message|forwarded message|weitergeleitete nachricht|message transféré|mensaje reenviado|messaggio inoltrato|mensaje original|ursprüngliche nachricht|message d'origine|messaggio originale|oorspronkelijk bericht|mensagem original)\s*-{2,}\s*$`)
	reBeginFwd     = lazyre.New(`(?i)^\s*begin forwarded message\s*:\s*$`)
	reUnderline    = lazyre.New(`^\s*_{10,}\s*$`)
	reHdrFrom      = lazyre.New(`(?i)^\s*\*?(from|von|de|da|van)\s*:\*?\s+\S`)
	reHdrSentDate  = lazyre.New(`(?i)^\s*\*?(sent|date|gesendet|envoyé|enviado|inviato|verzonden|datum)\s*:\*?\s+\S`)
	reFooterPhrase = lazyre.New(`(?i)(confidential(ity)? (notice|information|and privileged|or privileged)|privileged and confidential|intended (solely |only )?(for )?(the )?(recipient|addressee)|(to|click here to|you can|you may) unsubscribe|unsubscribe (here|from this|at any time|link)|you('|’)re receiving this|you are receiving this|manage (your )?preferences|consider the environment before printing|office hours are|org\.? ?no\.|this (e-?mail|message)[^.]{0,60}(may contain|is intended|and any attachments)|^sent from my (phone|iphone|ipad|android|mobile)|mailman/listinfo|^-{5,} next part -{5,}|non-text attachment was scrubbed|^_{10,}\n.{0,80}mailing list)`)
)

// CleanMailBody removes what a mail client shows as history or boilerplate from a
// plain-text body, and never the author's own lines:
//   - quoted lines (">" blocks, wherever they are: top-, bottom- and interleaved
//     replies keep every line the author wrote between and after them);
//   - the attribution line ("On … wrote:", also split over two lines, and its
//     German, French, Spanish and Scandinavian forms) right before a quoted block or
//     at the end;
//   - a signature ("-- " line) up to the next quoted block or the end;
//   - an Outlook-style history ("-----Original Message-----", a "From: … Sent: …"
//     header block, localised "Da:/Inviato:", an underline before one) and a
//     forwarded copy ("---------- Forwarded message ---------", "Begin forwarded
//     message:"): it ends the message, as nothing of the author follows it, and
//     the person received the forwarded or quoted message itself;
//   - trailing legal, unsubscribe and mailing-list footers.
//
// A message attached whole (message/rfc822, a digest's parts) is not a quote:
// walk keeps its text under an "[attached message]" line.
func CleanMailBody(s string) string {
	s = strings.ReplaceAll(s, "\u00a0", " ")
	lines := strings.Split(s, "\n")
	quoted := func(l string) bool { return strings.HasPrefix(strings.TrimLeft(l, " \t"), ">") }
	// nextContent is the index of the first non-blank line from i (len(lines) if none).
	nextContent := func(i int) int {
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		return i
	}
	cut := len(lines)
	for i := 0; i < len(lines) && cut == len(lines); i++ {
		l := lines[i]
		if !strings.Contains(l, "--") && !strings.Contains(l, ":") && !strings.Contains(l, "__") {
			continue // none of the history markers below can match
		}
		switch {
		case reOriginal.MatchString(l), reBeginFwd.MatchString(l):
			cut = i
		case reUnderline.MatchString(l) && nextHas(lines, i+1, 3, reHdrFrom):
			cut = i
		case reHdrFrom.MatchString(l) && (i == 0 || strings.TrimSpace(lines[i-1]) == "") && nextHas(lines, i+1, 3, reHdrSentDate):
			cut = i
		}
	}
	lines = lines[:cut]
	drop := make([]bool, len(lines))
	inSig := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimRight(l, " \t")
		switch {
		case quoted(l):
			drop[i] = true
			inSig = false
		case t == "--" || l == "-- ":
			drop[i] = true
			inSig = true
		case inSig:
			drop[i] = true
		case !endsWithColon(l) && (i+1 >= len(lines) || !endsWithColon(lines[i+1])):
			// an attribution ends with "wrote:" on this line or the next
		case reOnWrote.MatchString(l):
			if k := nextContent(i + 1); k == len(lines) || quoted(lines[k]) {
				drop[i] = true
			}
		case reOnStart.MatchString(l) && i+1 < len(lines) && reWroteEnd.MatchString(lines[i+1]) && !quoted(lines[i+1]):
			if k := nextContent(i + 2); k == len(lines) || quoted(lines[k]) {
				drop[i], drop[i+1] = true, true
				i++
			}
		}
	}
	kept := make([]string, 0, len(lines))
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, strings.TrimRight(l, " \t"))
		}
	}
	paras := splitParagraphs(strings.Join(kept, "\n"))
	for len(paras) > 0 && isFooter(paras[len(paras)-1]) {
		paras = paras[:len(paras)-1]
	}
	return strings.TrimSpace(strings.Join(paras, "\n\n"))
}

// endsWithColon reports whether l ends with ':' (after trailing blanks).
func endsWithColon(l string) bool {
	return strings.HasSuffix(strings.TrimRight(l, " \t"), ":")
}

// nextHas reports whether one of the n lines from i matches re.
func nextHas(lines []string, i, n int, re *lazyre.Regexp) bool {
	for j := i; j < len(lines) && j < i+n; j++ {
		if re.MatchString(lines[j]) {
			return true
		}
	}
	return false
}

// isFooter reports whether a paragraph is boilerplate: a legal notice, an
// unsubscribe line, an office-hours or print-the-environment note.
func isFooter(p string) bool {
	if len(p) > 900 {
		return false
	}
	low := strings.ToLower(p)
	for _, k := range footerStems {
		if strings.Contains(low, k) {
			return reFooterPhrase.MatchString(p)
		}
	}
	return false
}

// footerStems are substrings one of which every reFooterPhrase match holds: a
// paragraph with none of them is not matched against the (slower) expression.
var footerStems = []string{"confidential", "intended", "unsubscribe", "receiving this", "preferences", "environment before",
	"office hours", "org.", "org no", "this e", "this message", "sent from my", "listinfo", "next part", "scrubbed", "mailing list"}

// splitParagraphs splits on blank lines and drops empty paragraphs.
func splitParagraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.Trim(p, "\n"); strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}
