package mail

import (
	"bytes"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/lazyre"
)

// earliestMailYear is the first year a mail date is believed in: an earlier Date
// (1970-01-01 from a zeroed clock, 1900 from a broken client) is treated as no date.
const earliestMailYear = 1980

// looseDate is a date read by parseLooseDate; zoneGuessed says the text named no
// zone and UTC was assumed.
type looseDate struct {
	T           time.Time
	zoneGuessed bool
}

var monthNames = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	// the German, French, Spanish and Italian abbreviations that differ, as some
	// clients localise them
	"mär": 3, "mrz": 3, "mai": 5, "okt": 10, "dez": 12, "janv": 1, "févr": 2, "fevr": 2, "mars": 3, "avr": 4, "juin": 6,
	"juil": 7, "août": 8, "aout": 8, "déc": 12, "ene": 1, "abr": 4, "ago": 8, "dic": 12, "gen": 1, "mag": 5, "giu": 6,
	"lug": 7, "set": 9, "ott": 10,
}

// monthNum reads a month name or abbreviation ("Dec", "December", "dec.").
func monthNum(s string) (time.Month, bool) {
	s = strings.ToLower(strings.TrimRight(s, ".,"))
	if m, ok := monthNames[s]; ok {
		return m, true
	}
	if len(s) >= 3 {
		if m, ok := monthNames[s[:3]]; ok && len(s) <= 9 {
			return m, true
		}
	}
	return 0, false
}

// zoneOffsets are the named zones mail carries (RFC 822's obsolete ones and a few
// common abbreviations), in seconds east of UTC.
var zoneOffsets = map[string]int{
	"UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "WET": 0,
	"EST": -5 * 3600, "EDT": -4 * 3600, "CST": -6 * 3600, "CDT": -5 * 3600,
	"MST": -7 * 3600, "MDT": -6 * 3600, "PST": -8 * 3600, "PDT": -7 * 3600,
	"AKST": -9 * 3600, "AKDT": -8 * 3600, "HST": -10 * 3600,
	"CET": 3600, "CEST": 7200, "MET": 3600, "MEST": 7200, "BST": 3600, "IST": 19800, "EET": 7200, "EEST": 10800,
	"MSK": 10800, "JST": 9 * 3600, "KST": 9 * 3600, "HKT": 8 * 3600, "SGT": 8 * 3600, "AEST": 10 * 3600, "AEDT": 11 * 3600,
	"NZST": 12 * 3600, "NZDT": 13 * 3600, "WIB": 7 * 3600,
}

var (
	reClock   = lazyre.New(`^(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:[.,]\d+)?)?$`)
	reOffset  = lazyre.New(`^(?:(?:GMT|UTC|UT)?([+-])(\d{1,2}):?(\d{2})?)$`)
	reISODate = lazyre.New(`^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:[.,]\d+)?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$`)
	reDMYDash = lazyre.New(`^(\d{1,2})-([A-Za-z]{3,9})-(\d{2,4})$`)
)

// parseLooseDate reads the dates real mail carries: RFC 5322 and its obsolete
// forms (no weekday, one-digit fields, two-digit years, named or military zones,
// "GMT+0100", a trailing comment), asctime ("Sat Dec 11 13:43:05 2004"), ISO 8601,
// and "11-Dec-2004". A date without a zone is read as UTC and reported so. Years
// before earliestMailYear are refused.
func parseLooseDate(s string) (looseDate, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return looseDate{}, false
	}
	if t, err := mail.ParseDate(s); err == nil {
		// Go reads a zone abbreviation it does not know as offset 0: use the table.
		if name, off := t.Zone(); off == 0 {
			if o, ok := zoneOffsets[strings.ToUpper(name)]; ok && o != 0 {
				t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.FixedZone(name, o))
			}
		}
		return checkYear(looseDate{T: t})
	}
	if m := reISODate.FindStringSubmatch(s); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		h, _ := strconv.Atoi(m[4])
		mi, _ := strconv.Atoi(m[5])
		sec, _ := strconv.Atoi(m[6])
		if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 {
			return looseDate{}, false
		}
		loc, guessed := time.UTC, true
		if m[7] != "" {
			if off, ok := parseOffset(m[7]); ok {
				loc, guessed = time.FixedZone("", off), false
			}
		}
		return checkYear(looseDate{T: time.Date(y, time.Month(mo), d, h, mi, sec, 0, loc), zoneGuessed: guessed})
	}
	// drop comments: "(CET)", "(GMT Standard Time)"
	for {
		i := strings.IndexByte(s, '(')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], ')')
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + " " + s[i+j+1:]
	}
	fields := strings.Fields(strings.NewReplacer(",", " ").Replace(s))
	var (
		day, year, h, mi, sec = -1, -1, -1, 0, 0
		month                 time.Month
		off                   int
		haveZone              bool
	)
	for _, f := range fields {
		if m := reDMYDash.FindStringSubmatch(f); m != nil {
			if mo, ok := monthNum(m[2]); ok {
				day, _ = strconv.Atoi(m[1])
				month = mo
				year, _ = strconv.Atoi(m[3])
				continue
			}
		}
		if m := reClock.FindStringSubmatch(f); m != nil && h < 0 {
			h, _ = strconv.Atoi(m[1])
			mi, _ = strconv.Atoi(m[2])
			sec, _ = strconv.Atoi(m[3])
			continue
		}
		if mo, ok := monthNum(f); ok && month == 0 {
			month = mo
			continue
		}
		if n, err := strconv.Atoi(f); err == nil && f[0] != '+' && f[0] != '-' {
			switch {
			case day < 0 && n >= 1 && n <= 31 && len(f) <= 2:
				day = n
			case year < 0:
				year = n
			}
			continue
		}
		if h >= 0 && !haveZone {
			if o, ok := parseOffset(f); ok {
				off, haveZone = o, true
				continue
			}
			if o, ok := zoneOffsets[strings.ToUpper(f)]; ok {
				off, haveZone = o, true
				continue
			}
			if len(f) == 1 && (f[0] >= 'A' && f[0] <= 'Z' || f[0] >= 'a' && f[0] <= 'z') {
				// RFC 822 military zones are unreliable (RFC 5322 §4.3): read as UTC
				haveZone = true
				continue
			}
		}
	}
	if day < 0 || month == 0 || year < 0 || h < 0 || h > 23 || mi > 59 || sec > 60 {
		return looseDate{}, false
	}
	switch {
	case year < 50:
		year += 2000
	case year < 100:
		year += 1900
	}
	loc := time.UTC
	if haveZone {
		loc = time.FixedZone("", off)
	}
	t := time.Date(year, month, day, h, mi, sec, 0, loc)
	if t.Day() != day {
		return looseDate{}, false // 31 Feb
	}
	return checkYear(looseDate{T: t, zoneGuessed: !haveZone})
}

func checkYear(d looseDate) (looseDate, bool) {
	if d.T.Year() < earliestMailYear || d.T.After(time.Now().AddDate(1, 0, 0)) {
		return looseDate{}, false
	}
	return d, true
}

// parseOffset reads "+0200", "-07:00", "+2", "GMT+0100", "Z".
func parseOffset(s string) (int, bool) {
	if s == "Z" {
		return 0, true
	}
	m := reOffset.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[2])
	mi, _ := strconv.Atoi(m[3])
	if h > 14 || mi > 59 {
		return 0, false
	}
	off := h*3600 + mi*60
	if m[1] == "-" {
		off = -off
	}
	return off, true
}

// receivedDate reads the date after the last ';' of a Received header (the time
// the receiving server took the message).
func receivedDate(received string) (looseDate, bool) {
	i := strings.LastIndexByte(received, ';')
	if i < 0 {
		return looseDate{}, false
	}
	return parseLooseDate(received[i+1:])
}

// validMsgID reports whether id (without brackets) looks like a Message-ID: a
// local part and a domain around one '@', no spaces. Junk values some clients put
// in References or In-Reply-To ("yes", "n", a date) would otherwise join unrelated
// threads.
func validMsgID(id string) bool {
	if len(id) < 3 || len(id) > 250 || strings.ContainsAny(id, " \t\r\n<>") {
		return false
	}
	at := strings.LastIndexByte(id, '@')
	return at > 0 && at < len(id)-1
}

// msgIDs extracts every <id> of a References-style header that looks like a
// Message-ID, without brackets, oldest first; bare ids (no brackets) count when they
// look like one.
func msgIDs(s string) []string {
	var out []string
	rest := s
	bracketed := false
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		if j < 0 {
			break
		}
		bracketed = true
		// 8-bit junk in an id is replaced the same way wherever the id appears, so
		// a reply still names its parent and the ref stays valid UTF-8
		if id := strings.ToValidUTF8(strings.TrimSpace(rest[i+1:i+j]), "\uFFFD"); validMsgID(id) {
			out = append(out, id)
		}
		rest = rest[i+j+1:]
	}
	if !bracketed {
		for _, f := range strings.Fields(s) {
			if f = strings.ToValidUTF8(strings.Trim(f, "<>,;\"'"), "\uFFFD"); validMsgID(f) {
				out = append(out, f)
			}
		}
	}
	return out
}

func firstMsgID(s string) string {
	ids := msgIDs(s)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// rePipermail matches the sender form of Pipermail/Mailman archives:
// "user at host (Real Name)" or "user at host".
var rePipermail = lazyre.New(`^\s*([^\s@()<>"]+)\s+at\s+([^\s@()<>"]+\.[^\s@()<>"]+)\s*(?:\((.*)\))?\s*$`)

// pipermailSender reads the Pipermail form of a From header.
func pipermailSender(s string) (*mail.Address, bool) {
	m := rePipermail.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	return &mail.Address{Name: strings.TrimSpace(m[3]), Address: m[1] + "@" + m[2]}, true
}

// repairHeader makes a raw message's header block readable by a strict parser,
// keeping what it says: a UTF-8 BOM and a leading mbox envelope line ("From addr
// date", whose date it returns) are removed, and a line of the header block that is
// neither a field nor a continuation (a fold whose leading space was lost) is read as
// a continuation of the field before it. notes say what was repaired.
func repairHeader(raw []byte) (fixed []byte, envDate time.Time, notes []string) {
	raw = bytes.TrimPrefix(raw, []byte{0xEF, 0xBB, 0xBF})
	if bytes.HasPrefix(raw, []byte("From ")) {
		nl := bytes.IndexByte(raw, '\n')
		if nl < 0 {
			return raw, envDate, notes
		}
		envDate = envelopeDate(string(bytes.TrimRight(raw[:nl], "\r")))
		raw = raw[nl+1:]
	}
	// Find the header block and check its lines.
	var out []byte
	broken := 0
	off := 0
	for off < len(raw) {
		nl := bytes.IndexByte(raw[off:], '\n')
		end := len(raw)
		if nl >= 0 {
			end = off + nl + 1
		}
		line := raw[off:end]
		t := bytes.TrimRight(line, "\r\n")
		if len(t) == 0 {
			if out == nil {
				return raw, envDate, notes
			}
			out = append(out, raw[off:]...)
			break
		}
		switch {
		case t[0] == ' ' || t[0] == '\t':
			if off == 0 {
				line = bytes.TrimLeft(line, " \t")
			}
		case reHeaderLine.Match(t):
		case off == 0:
			// not a header block at all: leave it to the parser to refuse
			return raw, envDate, notes
		default:
			broken++
			line = append([]byte(" "), line...)
		}
		if out == nil {
			out = make([]byte, 0, len(raw)+broken+16)
		}
		out = append(out, line...)
		off = end
	}
	if out == nil {
		out = raw
	}
	if broken > 0 {
		notes = append(notes, fmt.Sprintf("%d header line(s) were neither a field nor folded; read as continuations", broken))
	}
	return out, envDate, notes
}
