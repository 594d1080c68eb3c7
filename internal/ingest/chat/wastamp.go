package chat

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
)

// WhatsApp writes each message's timestamp in the layout of the phone's locale and
// app version: the date's three numbers in any order (day/month/year, month/day,
// year/month/day) with "/", "." or "-" (and Korean's ". "), 2- or 4-digit years or
// era years (Buddhist "2565 BE", Japanese "R4"), any script's digits (Arabic-Indic,
// Persian, Devanagari, Bengali, Thai, ...), bidi and other invisible marks between
// the parts, a 12- or 24-hour clock whose AM/PM word may come before or after the
// time ("a. m.", "午後", "오후", "م", "SA"), the date or the time first, brackets
// (iOS), " - " (Android), or ": " (iOS of 2016). Rather than a list of layouts, a
// header is read as tokens (waParse) and the file's layout — which number is the
// day, which word is AM — is inferred from all its headers (waResolve).

// waStamp is a header line's timestamp as written, before the file's layout is known.
type waStamp struct {
	N        [3]int32 // the date's numbers in written order
	nd       [3]int8  // their digit counts
	era      byte     // Japanese era letter before a number ('r', 'h', 's', 't'), 0 when none
	eraPos   int8     // the number carrying era
	be       bool     // a Buddhist-era word after the date
	MonPos   int8     // the number written as a month name ("28 Aug 2013"), -1 when none
	h, mi, s int16
	mark     string // the word next to the time (AM/PM or a connector like "klo"), normalised
	post     bool   // mark was read after the time
	rest     string // "Name: text" or an event line, as in the line
	// spaceAt is the byte offset in the line of what follows the time and one
	// space when nothing else separates the header from the name ("13. 6. 2018.
	// 21:25:15 Luke: hi"); the file's headers tell whether that is its layout
	// (waSpaceLayout)
	spaceAt  int32
	hasSpace bool
	sep      byte // what ended the header: ']', '-', ':' or ','
}

// waHeadRunes bounds the runes of a line read for its timestamp.
const waHeadRunes = 64

// waInvisible reports the marks WhatsApp and bidi text put between a header's parts.
func waInvisible(r rune) bool {
	switch {
	case r == 0x200B || r == 0x200C || r == 0x200D || r == 0x200E || r == 0x200F || r == 0xFEFF || r == 0x061C:
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// waTrimMarks drops the invisible marks WhatsApp puts before lines and texts.
func waTrimMarks(s string) string {
	return strings.TrimLeftFunc(s, waInvisible)
}

// waDigit returns the value of a decimal digit of any script (-1 for other runes).
// Unicode encodes every script's decimal digits as runs of ten, 0 to 9.
func waDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < 0x660 || !unicode.Is(unicode.Nd, r) {
		return -1
	}
	start := r
	for unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10
}

// waNorm maps a line's first runes to what waParse reads: ASCII digits, one space
// for any run of spaces, no invisible marks, lower case, common punctuation of other
// scripts as ASCII. off[i] is the byte offset in the line of norm[i]; off has one
// more entry, the offset after the last rune read.
func waNorm(line string, norm []rune, off []int) ([]rune, []int) {
	norm, off = norm[:0], off[:0]
	n := 0
	for i, r := range line {
		if n == waHeadRunes {
			off = append(off, i)
			return norm, off
		}
		n++
		switch {
		case waInvisible(r):
			continue
		case r == ' ' || r == '\t' || r == 0xA0 || r == 0x202F || r == 0x2007 || r == 0x2009 || r == 0x3000 || r > 0x7f && unicode.IsSpace(r):
			if len(norm) > 0 && norm[len(norm)-1] == ' ' {
				continue
			}
			r = ' '
		case r == 0x060C || r == 0xFF0C || r == 0x3001:
			r = ','
		case r == 0x066B || r == 0xFF0E:
			r = '.'
		case r == 0xFF1A:
			r = ':'
		case r == 0xFF0F:
			r = '/'
		case r == 0x2010 || r == 0x2011 || r == 0x2012 || r == 0x2013 || r == 0x2014 || r == 0x2212:
			r = '-'
		case r == '년' || r == '월' || r == '年' || r == '月':
			r = '/' // "2022년 3월 18일", "2022年3月18日"
		case r == '일' || r == '日':
			r = ' '
			if len(norm) > 0 && norm[len(norm)-1] == ' ' {
				continue
			}
		case r == 0xFF3B:
			r = '['
		case r == 0xFF3D:
			r = ']'
		case r >= '0' && r <= '9':
		case r < 0x80:
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
		case r > 0x7f:
			if d := waDigit(r); d >= 0 {
				r = rune('0' + d)
			} else {
				r = unicode.ToLower(r)
			}
		}
		norm = append(norm, r)
		off = append(off, i)
	}
	off = append(off, len(line))
	return norm, off
}

type waParser struct {
	s       []rune
	i       int
	timeEnd int // index after the time's digits
}

func (p *waParser) peek() rune {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return -1
}

func (p *waParser) eat(r rune) bool {
	if p.peek() == r {
		p.i++
		return true
	}
	return false
}

func (p *waParser) sp() {
	for p.peek() == ' ' {
		p.i++
	}
}

// num reads 1 to max ASCII digits.
func (p *waParser) num(max int) (v int, n int8, ok bool) {
	for int(n) < max && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		v = v*10 + int(p.s[p.i]-'0')
		p.i++
		n++
	}
	if n > 0 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		return 0, 0, false // too many digits
	}
	return v, n, n > 0
}

func waWordRune(r rune) bool {
	return r == '.' || r == '\'' || r == 0x05F4 || r == 0x05F3 || r == '"' || unicode.IsLetter(r) || unicode.IsMark(r)
}

// word reads a short word (letters, dots, and single spaces inside), such as "a. m.",
// "午後", "klo"; it returns it without dots and spaces ("" when none).
func (p *waParser) word() string {
	start := p.i
	end := p.i
	for j := p.i; j < len(p.s) && j-start < 24; j++ {
		r := p.s[j]
		if waWordRune(r) {
			end = j + 1
			continue
		}
		if r == ' ' && j+1 < len(p.s) && waWordRune(p.s[j+1]) && j > start {
			continue
		}
		break
	}
	if end == start {
		return ""
	}
	var b strings.Builder
	for _, r := range p.s[start:end] {
		if r != '.' && r != ' ' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		// only dots: "13:34." — the dot belongs to the separator
		return ""
	}
	p.i = end
	return b.String()
}

// date reads the date's three numbers with their separators; one of them may be
// a month's name in any of waMonths' languages ("28 Aug 2013", "Aug 28, 2013",
// "28. August 2013", "28 de agosto de 2013", "28-aug-2013"), then a space alone
// may separate it from its neighbours.
func (p *waParser) date(st *waStamp) bool {
	start := p.i
	st.MonPos = -1
	for k := 0; k < 3; k++ {
		if k > 0 {
			at := p.i
			p.sp()
			spaced := p.i > at
			if r := p.peek(); r == '/' || r == '.' || r == '-' || r == ',' && st.MonPos >= 0 {
				p.i++
			} else if !spaced || st.MonPos < 0 && !p.monthAhead() {
				p.i = start
				return false
			}
			p.sp()
			p.skipDe()
		}
		if r := p.peek(); (k == 0 || k == 2) && (r == 'r' || r == 'h' || r == 's' || r == 't') && p.i+1 < len(p.s) && p.s[p.i+1] >= '0' && p.s[p.i+1] <= '9' {
			st.era, st.eraPos = byte(r), int8(k)
			p.i++
		}
		v, n, ok := p.num(4)
		if !ok {
			m := 0
			if st.MonPos < 0 && k < 2 {
				m = p.month()
			}
			if m == 0 {
				p.i = start
				st.MonPos = -1
				return false
			}
			v, n, st.MonPos = m, 2, int8(k)
		}
		st.N[k], st.nd[k] = int32(v), n
	}
	p.eat('.') // Korean "2022. 3. 18."
	save := p.i
	p.sp()
	if w := p.word(); w == "be" || w == "พศ" || w == "bе" {
		st.be = true
	} else {
		p.i = save
	}
	return true
}

// letters reads a run of letters (and marks) and one dot after it, returning
// the letters ("" when none, then nothing is read).
func (p *waParser) letters() string {
	j := p.i
	for j < len(p.s) && j-p.i < 12 && (unicode.IsLetter(p.s[j]) || unicode.IsMark(p.s[j])) {
		j++
	}
	if j == p.i || j < len(p.s) && (unicode.IsLetter(p.s[j]) || unicode.IsMark(p.s[j])) {
		return ""
	}
	w := string(p.s[p.i:j])
	p.i = j
	p.eat('.')
	return w
}

// month reads a month's name or abbreviation, returning its number (0 when the
// word is none, then nothing is read).
func (p *waParser) month() int {
	save := p.i
	if m := waMonths()[p.letters()]; m > 0 {
		return m
	}
	p.i = save
	return 0
}

// monthAhead reports whether a month's name follows (after a Spanish or
// Portuguese "de").
func (p *waParser) monthAhead() bool {
	save := p.i
	p.skipDe()
	ok := p.month() > 0
	p.i = save
	return ok
}

// skipDe skips the "de " that Spanish and Portuguese write around a month's
// name ("28 de agosto de 2013").
func (p *waParser) skipDe() {
	if p.i+2 < len(p.s) && p.s[p.i] == 'd' && p.s[p.i+1] == 'e' && p.s[p.i+2] == ' ' {
		p.i += 3
	}
}

// waMonthNames lists the months' names in the languages whose phones write them
// in chat exports' dates, January first, lower case; every prefix of three or
// more letters that only one month starts with is read as that month.
var waMonthNames = [][12]string{
	{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"},
	{"januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september", "oktober", "november", "dezember"},
	{"janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"},
	{"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"},
	{"gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre", "novembre", "dicembre"},
	{"janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro", "novembro", "dezembro"},
	{"januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober", "november", "december"},
	{"januari", "februari", "mars", "april", "maj", "juni", "juli", "augusti", "september", "oktober", "november", "december"},
	{"januar", "februar", "marts", "april", "maj", "juni", "juli", "august", "september", "oktober", "november", "december"},
	{"stycznia", "lutego", "marca", "kwietnia", "maja", "czerwca", "lipca", "sierpnia", "września", "października", "listopada", "grudnia"},
	{"января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября", "ноября", "декабря"},
	{"январь", "февраль", "март", "апрель", "май", "июнь", "июль", "август", "сентябрь", "октябрь", "ноябрь", "декабрь"},
	{"ocak", "şubat", "mart", "nisan", "mayıs", "haziran", "temmuz", "ağustos", "eylül", "ekim", "kasım", "aralık"},
	{"januari", "februari", "maret", "april", "mei", "juni", "juli", "agustus", "september", "oktober", "november", "desember"},
	{"januar", "februar", "mars", "april", "mai", "juni", "juli", "august", "september", "oktober", "november", "desember"},
}

var waMonthTable struct {
	once sync.Once
	m    map[string]int
}

// waMonths maps month names and their unambiguous prefixes (three letters or
// more) to month numbers, built on first use.
func waMonths() map[string]int {
	waMonthTable.once.Do(func() {
		months := map[string]map[int]bool{}
		for _, lang := range waMonthNames {
			for i, name := range lang {
				r := []rune(name)
				for n := 3; n <= len(r); n++ {
					pre := string(r[:n])
					if months[pre] == nil {
						months[pre] = map[int]bool{}
					}
					months[pre][i+1] = true
				}
			}
		}
		m := map[string]int{}
		for pre, set := range months {
			if len(set) == 1 {
				for v := range set {
					m[pre] = v
				}
			}
		}
		for _, lang := range waMonthNames { // a whole name is its month
			for i, name := range lang {
				m[name] = i + 1
			}
		}
		waMonthTable.m = m
	})
	return waMonthTable.m
}

// clock reads the time: an optional word before it, h:mm or h.mm, optional
// seconds, an optional word after it.
func (p *waParser) clock(st *waStamp) bool {
	start := p.i
	pre := p.word()
	p.sp()
	h, _, ok := p.num(2)
	if !ok {
		p.i = start
		return false
	}
	sep := p.peek()
	switch {
	case sep == ':' || sep == '.':
		p.i++
	case sep == 'h' || sep == ' ' && p.i+1 < len(p.s) && p.s[p.i+1] == 'h':
		// Canadian French "18 h 30"
		sep = 'h'
		p.sp()
		p.i++
		p.sp()
	default:
		p.i = start
		return false
	}
	mi, n, ok := p.num(2)
	if !ok || n != 2 {
		p.i = start
		return false
	}
	st.h, st.mi, st.s = int16(h), int16(mi), 0
	if p.peek() == sep && p.i+1 < len(p.s) && p.s[p.i+1] >= '0' && p.s[p.i+1] <= '9' {
		p.i++
		s, n, ok := p.num(2)
		if !ok || n != 2 {
			p.i = start
			return false
		}
		st.s = int16(s)
	}
	save := p.i
	p.timeEnd = p.i
	p.sp()
	post := p.word()
	if post == "" {
		p.i = save
	}
	st.mark = pre
	if post != "" {
		st.mark, st.post = post, true
		if pre != "" && !waKnownMark(post) && waKnownMark(pre) {
			st.mark, st.post = pre, false
		}
	}
	return true
}

// waParse reads the timestamp at the start of a line. ok says the line is a header
// (rest set); stamped says it starts with a date and a time although what follows
// is not a header's (the line must not be read as the text of another message).
func waParse(line string, buf *waBuf) (st waStamp, ok, stamped bool) {
	if line == "" {
		return st, false, false
	}
	c := line[0]
	if c != '[' && (c < '0' || c > '9') && c < 0x80 && c != 'R' && c != 'H' && c != 'S' && c != 'T' && !waMonthStart(line) {
		return st, false, false
	}
	buf.norm, buf.off = waNorm(line, buf.norm, buf.off)
	p := waParser{s: buf.norm}
	bracket := p.eat('[')
	p.sp()
	body := p.i
	if p.date(&st) && p.afterDate() && p.clock(&st) {
		if j := p.timeEnd; !bracket && j+1 < len(p.s) && p.s[j] == ' ' {
			for j < len(p.s) && p.s[j] == ' ' {
				j++
			}
			if j < len(p.s) && !strings.ContainsRune("-:.,]", p.s[j]) {
				st.spaceAt, st.hasSpace = int32(buf.off[j]), true
			}
		}
	} else {
		p.i = body
		st = waStamp{}
		if !(p.clock(&st) && p.afterTime() && p.date(&st)) {
			return waStamp{}, false, false
		}
	}
	p.sp()
	if bracket {
		if !p.eat(']') {
			return st, false, true
		}
		st.sep = ']'
		p.sp()
	} else {
		p.eat('.')
		p.sp()
		switch {
		case p.eat('-') && (p.peek() == ' ' || p.peek() == -1):
			st.sep = '-'
			p.sp()
		case p.eat(':') && (p.peek() == ' ' || p.peek() == -1):
			st.sep = ':'
			p.sp()
		case p.eat(',') && p.peek() == ' ': // Korean: "2022년 3월 18일 오후 2:56, 민수 : 안녕"
			st.sep = ','
			p.sp()
		default:
			return st, false, true
		}
	}
	st.rest = line[buf.off[p.i]:]
	return st, true, true
}

// waMonthStart reports whether a line starts with three ASCII letters that begin
// a month's name ("Aug 28, 2013, 7:23 PM - ").
func waMonthStart(line string) bool {
	if len(line) < 4 {
		return false
	}
	var b [3]byte
	for i := 0; i < 3; i++ {
		c := line[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
		b[i] = c
	}
	return waMonths()[string(b[:])] > 0
}

// afterDate reads what separates the date from the time: a comma and spaces.
func (p *waParser) afterDate() bool {
	p.sp()
	p.eat(',')
	p.sp()
	return true
}

func (p *waParser) afterTime() bool {
	p.sp()
	p.eat(',')
	p.sp()
	return true
}

// waBuf is scratch space for waParse, reused across lines.
type waBuf struct {
	norm []rune
	off  []int
}

// The AM and PM words of the locales WhatsApp writes 12-hour clocks in, without
// dots and spaces, lower case. A file's other words are told apart by its own
// times (waResolve).
var (
	waAMWords = map[string]bool{
		"am": true, "a": true, "vorm": true, "vm": true, "fm": true, "öö": true, "dop": true, "de": true,
		"πμ": true, "дп": true, "قظ": true, "ص": true, "sa": true, "午前": true, "上午": true, "오전": true,
		"ก่อนเที่ยง": true, "पूर्वाह्न": true, "পূর্বাহ্ণ": true, "eparadites": true, "ap": true, "pg": true,
		"לפנהצ": true, "לפנה״צ": true, "قبلدوپہر": true, "முற்பகல்": true, "ព្រឹក": true,
		"priešpiet": true, "صباحا": true, "dp": true, "утра": true, "ночи": true,
	}
	waPMWords = map[string]bool{
		"pm": true, "p": true, "nachm": true, "nm": true, "em": true, "ös": true, "odp": true, "du": true,
		"μμ": true, "пп": true, "بظ": true, "م": true, "ch": true, "午後": true, "下午": true, "오후": true,
		"หลังเที่ยง": true, "अपराह्न": true, "অপরাহ্ণ": true, "epasdites": true, "ip": true, "ptg": true,
		"אחהצ": true, "אחה״צ": true, "بعددوپہر": true, "பிற்பகல்": true, "ល្ងាច": true,
		"popiet": true, "مساء": true, "pp": true, "вечера": true, "дня": true,
	}
)

// waPeriodWords are the day periods that locales with flexible day periods write
// instead of AM/PM ("3:07 in the afternoon", "10:00 de la noche", "凌晨2:00"),
// without spaces and dots, with the side of the clock they mean (waHour24).
var waPeriodWords = map[string]byte{
	"inthemorning": 'a', "intheafternoon": 'p', "intheevening": 'p', "atnight": 'n', "atnoon": 'm', "noon": 'm', "midnight": 'a',
	"delamañana": 'a', "delatarde": 'p', "delanoche": 'n', "delamadrugada": 'a', "delmediodía": 'm', "delmediodia": 'm',
	"damanhã": 'a', "datarde": 'p', "danoite": 'n', "damadrugada": 'a',
	"dumatin": 'a', "dusoir": 'p', "del'après-midi": 'p',
	"morgens": 'a', "vormittags": 'a', "mittags": 'm', "nachmittags": 'p', "abends": 'p', "nachts": 'n',
	"凌晨": 'a', "早上": 'a', "清晨": 'a', "中午": 'm', "晚上": 'n', "傍晚": 'p', "深夜": 'n', "夜间": 'n',
	"새벽": 'a', "아침": 'a', "낮": 'm', "저녁": 'p', "밤": 'n',
}

// waConnectors are words some locales write between the date and the time ("klo",
// "kl.", "um", "à", "at", "pukul", "saat", "lúc"): never AM or PM.
var waConnectors = map[string]bool{
	"klo": true, "kl": true, "um": true, "à": true, "at": true, "pukul": true, "jam": true, "alle": true,
	"om": true, "o": true, "в": true, "saat": true, "lúc": true, "às": true, "a las": true, "alas": true,
}

// waKnownMark reports whether w is a known AM or PM word.
func waKnownMark(w string) bool { return waAMWords[w] || waPMWords[w] || waPeriodWords[w] != 0 }

// waLayout is a file's timestamp layout, inferred from all its headers.
type waLayout struct {
	day, mon, year int             // indexes into waStamp.n
	side           map[string]byte // a time word's meaning: 'a' (AM), 'p' (PM); absent = no clock word
	guessed        string          // the date order when no header showed it ("" when one did or it does not matter)
	conflict       bool            // headers disagree on the order (read with the majority)
	unknownMarks   []string        // words next to the time that may be AM/PM words but could not be told: read as neither
}

var waOrders = [...]struct {
	day, mon, year int
	name           string
}{
	{0, 1, 2, "day/month"},
	{1, 0, 2, "month/day"},
	{2, 1, 0, "year/month/day"},
	{1, 2, 0, "year/day/month"},
	{2, 0, 1, "month/year/day"},
	{0, 2, 1, "day/year/month"},
}

// waResolve infers the layout of a file's headers (those ok): which number is the year (its
// digits, an era, a value over 31), then which order of day and month makes the
// fewest impossible dates and the fewest steps back in time (a chat is in time
// order); and which words next to the time mean AM and PM (known words, or the
// file's own times: within one day, the word of the earlier messages is AM).
func waResolve(heads []waHead) waLayout {
	sts := make([]*waStamp, 0, len(heads))
	for i := range heads {
		if heads[i].ok {
			sts = append(sts, &heads[i].st)
		}
	}
	var lay waLayout
	lay.side, lay.unknownMarks = waSides(sts)
	yFirst, yMid, yLast, twelve := 0, 0, 0, false
	for i := range sts {
		st := sts[i]
		if st.nd[0] >= 3 || st.era != 0 && st.eraPos == 0 || st.N[0] > 31 {
			yFirst++
		}
		if st.nd[2] >= 3 || st.era != 0 && st.eraPos == 2 || st.N[2] > 31 || st.be {
			yLast++
		}
		if st.nd[1] >= 3 || st.N[1] > 31 {
			yMid++
		}
		if lay.side[st.mark] != 0 {
			twelve = true
		}
	}
	cands := []int{0, 1, 2}
	switch {
	case yMid > yFirst && yMid > yLast:
		cands = []int{4, 5}
	case yFirst > yLast:
		cands = []int{2, 3}
	case yLast > 0:
		cands = []int{0, 1}
	}
	if twelve && cands[0] == 0 {
		cands[0], cands[1] = 1, 0 // a 12-hour clock: month first when nothing tells
	}
	// a month written as a name says which number is the month
	named := [3]int{}
	for i := range sts {
		if mp := sts[i].MonPos; mp >= 0 {
			named[mp]++
		}
	}
	if mp := max(named[0], named[1], named[2]); mp*2 > len(sts) {
		m := 0
		for named[m] != mp {
			m++
		}
		var keep []int
		for _, c := range cands {
			if waOrders[c].mon == m {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			for c, o := range waOrders {
				if o.mon == m {
					keep = append(keep, c)
				}
			}
		}
		cands = keep
	}
	best, bestScore := -1, 0
	scores := map[int]int{}
	for _, c := range cands {
		o := waOrders[c]
		bad, back, prev := 0, 0, -1
		for i := range sts {
			d, m, y := sts[i].N[o.day], sts[i].N[o.mon], sts[i].N[o.year]
			if m < 1 || m > 12 || d < 1 || d > 31 {
				bad++
				continue
			}
			k := int(y)*372 + int(m)*31 + int(d)
			if k < prev {
				back++
			}
			prev = k
		}
		score := bad*1000 + back
		scores[c] = score
		if best < 0 || score < bestScore {
			best, bestScore = c, score
		}
	}
	o := waOrders[best]
	lay.day, lay.mon, lay.year = o.day, o.mon, o.year
	for _, c := range cands {
		// a tie matters between day/month and month/day only: a 2-digit year is
		// written last, and year/day/month is no locale's
		if c == best || scores[c] != bestScore || c > 1 || best > 1 {
			continue
		}
		// a tie: it matters only when the orders read some header differently
		alt := waOrders[c]
		for i := range sts {
			if sts[i].N[alt.day] != sts[i].N[o.day] || sts[i].N[alt.mon] != sts[i].N[o.mon] {
				lay.guessed = o.name
				break
			}
		}
	}
	if bestScore >= 1000 {
		lay.conflict = true
	}
	return lay
}

// waSides tells which of a file's time words mean AM and PM; unresolved lists the
// unknown words never seen with an hour over 12 whose meaning the times did not
// tell (read as neither).
func waSides(sts []*waStamp) (side map[string]byte, unresolved []string) {
	side = map[string]byte{}
	over12 := map[string]bool{}
	var unknown []string
	for i := range sts {
		w := sts[i].mark
		if w == "" {
			continue
		}
		if _, seen := side[w]; seen {
			if sts[i].h > 12 {
				over12[w] = true
			}
			continue
		}
		switch {
		case waAMWords[w]:
			side[w] = 'a'
		case waPMWords[w]:
			side[w] = 'p'
		case waPeriodWords[w] != 0:
			side[w] = waPeriodWords[w]
		case waConnectors[w]:
			side[w] = 0
		default:
			side[w] = 0
			unknown = append(unknown, w)
		}
		if sts[i].h > 12 {
			over12[w] = true
		}
	}
	var cand []string
	for _, w := range unknown {
		if !over12[w] {
			cand = append(cand, w)
		}
	}
	if len(cand) < 2 || len(cand) > 6 {
		return side, cand
	}
	if waInferSides(sts, side, cand) {
		return side, nil
	}
	return side, cand
}

// waInferSides tells the meaning of a file's unknown words next to the time
// (cand: never seen with an hour over 12) from the order of its messages: of
// every way to read each word as AM, PM or night (waHour24), those that put
// the fewest messages of one day before the message above them must all give
// every header the same hour. It sets side and reports whether they did.
func waInferSides(sts []*waStamp, side map[string]byte, cand []string) bool {
	idx := map[string]int{}
	for i, w := range cand {
		idx[w] = i
	}
	// consecutive headers of one day, one of them with an unknown word
	type pair struct{ a, b *waStamp }
	var pairs []pair
	for i := 1; i < len(sts) && len(pairs) < 4096; i++ {
		a, b := sts[i-1], sts[i]
		if a.N != b.N || a.mark == b.mark {
			continue
		}
		_, ua := idx[a.mark]
		_, ub := idx[b.mark]
		if ua || ub {
			pairs = append(pairs, pair{a, b})
		}
	}
	if len(pairs) == 0 {
		return false
	}
	sides := [...]byte{'a', 'p', 'n'}
	total := 1
	for range cand {
		total *= len(sides)
	}
	assign := make([]byte, len(cand))
	hour := func(st *waStamp) int {
		sd := side[st.mark]
		if k, ok := idx[st.mark]; ok {
			sd = assign[k]
		}
		return waHour24(int(st.h), sd)*60 + int(st.mi)
	}
	best := -1
	var winners [][]byte
	for code := 0; code < total; code++ {
		for k, c := 0, code; k < len(cand); k, c = k+1, c/len(sides) {
			assign[k] = sides[c%len(sides)]
		}
		back := 0
		for _, pr := range pairs {
			if hour(pr.b) < hour(pr.a) {
				back++
			}
		}
		switch {
		case best < 0 || back < best:
			best, winners = back, [][]byte{append([]byte(nil), assign...)}
		case back == best:
			winners = append(winners, append([]byte(nil), assign...))
		}
	}
	// the winners must agree on every header's hour
	for _, st := range sts {
		k, ok := idx[st.mark]
		if !ok {
			continue
		}
		h := waHour24(int(st.h), winners[0][k])
		for _, w := range winners[1:] {
			if waHour24(int(st.h), w[k]) != h {
				return false
			}
		}
	}
	for k, w := range cand {
		side[w] = winners[0][k]
	}
	return true
}

// waHour24 turns a 12-hour clock's hour into 0-23 by its day period: 'a' (AM:
// 12 is midnight), 'p' (PM: 12 is noon), 'n' (night, "at night", "de la
// noche": 6 to 11 are evening, 12 and 1 to 5 after midnight), 'm' (midday,
// "中午": 10 to 12 as read, 1 to 5 afternoon); 0 leaves it as read.
func waHour24(h int, side byte) int {
	if h > 12 {
		return h
	}
	switch side {
	case 'a':
		if h == 12 {
			return 0
		}
	case 'p':
		if h < 12 {
			return h + 12
		}
	case 'n':
		switch {
		case h == 12:
			return 0
		case h >= 6:
			return h + 12
		}
	case 'm':
		if h < 6 {
			return h + 12
		}
	}
	return h
}

// waYear reads the year number as written: two digits are 20xx, Buddhist years
// (BE, or 2400 and over) less 543, Japanese eras from their first year, Taiwan's
// Minguo years from 1911; Solar Hijri (Persian) and Islamic years are told by
// range. cal names the calendar ("" for Gregorian).
func waYear(st *waStamp, idx int) (y int, cal string) {
	y = int(st.N[idx])
	if st.era != 0 && int(st.eraPos) == idx {
		switch st.era {
		case 'r':
			return 2018 + y, ""
		case 'h':
			return 1988 + y, ""
		case 's':
			return 1925 + y, ""
		case 't':
			return 1911 + y, ""
		}
	}
	switch {
	case st.nd[idx] <= 2:
		return 2000 + y, ""
	case st.be || y >= 2400:
		return y - 543, ""
	case st.nd[idx] == 3 && y >= 90:
		return y + 1911, ""
	case y >= 1300 && y < 1420:
		return y, "persian"
	case y >= 1420 && y < 1600:
		return y, "hijri"
	}
	return y, ""
}

// waTime turns a header into epoch ms (local wall time) with the file's layout.
func waTime(st *waStamp, lay *waLayout) (int64, error) {
	day, mon := int(st.N[lay.day]), int(st.N[lay.mon])
	y, cal := waYear(st, lay.year)
	hour := waHour24(int(st.h), lay.side[st.mark])
	if hour > 23 || st.mi > 59 || st.s > 59 {
		return 0, waErr("time %02d:%02d:%02d is not a time of day", st.h, st.mi, st.s)
	}
	if mon < 1 || mon > 12 || day < 1 || day > 31 {
		return 0, waErr("day %d, month %d is not a date", day, mon)
	}
	switch cal {
	case "persian":
		y, mon, day = persianToGregorian(y, mon, day)
	case "hijri":
		y, mon, day = hijriToGregorian(y, mon, day)
	}
	if y < 1980 || y > 2200 {
		return 0, waErr("year %d is out of range", y)
	}
	t := time.Date(y, time.Month(mon), day, hour, int(st.mi), int(st.s), 0, time.Local)
	if t.Day() != day || int(t.Month()) != mon {
		return 0, waErr("%04d-%02d-%02d is not a date", y, mon, day)
	}
	return t.UnixMilli(), nil
}

type waError string

func (e waError) Error() string { return string(e) }

func waErr(format string, a ...any) error { return waError(fmt.Sprintf(format, a...)) }

// persianToGregorian converts a Solar Hijri date (the arithmetic of the jalaali
// algorithm).
func persianToGregorian(jy, jm, jd int) (int, int, int) {
	jy += 1595
	days := -355668 + 365*jy + (jy/33)*8 + ((jy%33)+3)/4 + jd
	if jm < 7 {
		days += (jm - 1) * 31
	} else {
		days += (jm-7)*30 + 186
	}
	// days counts from 0000-01-01 (proleptic Gregorian) as day 0
	t := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days)
	return t.Year(), int(t.Month()), t.Day()
}

// hijriToGregorian converts an Islamic (tabular) date; the calendars people's
// phones use may differ from it by a day.
func hijriToGregorian(y, m, d int) (int, int, int) {
	// days since the Islamic epoch (1 Muharram 1 AH = 622-07-16 Julian = 622-07-19 Gregorian)
	n := d + (295*(m-1)+9)/10 + (y-1)*354 + (3+11*y)/30 - 1
	t := time.Date(622, 7, 19, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n)
	return t.Year(), int(t.Month()), t.Day()
}

// waSpaceLayout reports whether a file's headers end at the space after the time
// ("13. 6. 2018. 21:25:15 Luke: hi", as some locales write): the words read
// after the time are then names, many and not AM/PM words, or the lines whose
// time is followed by a space and no other separator are most of the headers.
func waSpaceLayout(heads []waHead) bool {
	ok, spaceOnly := 0, 0
	words := map[string]bool{}
	for i := range heads {
		h := &heads[i]
		if h.ok {
			ok++
			// a name read as a word after the time is followed by its colon; a
			// day period ("in the afternoon - ") by the header's separator
			if h.st.post && h.st.hasSpace && h.st.sep == ':' && !waKnownMark(h.st.mark) {
				words[h.st.mark] = true
			}
		} else if h.st.hasSpace {
			spaceOnly++
		}
	}
	return len(words) >= 3 || spaceOnly > ok
}
