package retrieval

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/analysis"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// Query understanding: the people, addresses and dates a query names, and its
// content terms with their document frequencies.

// ParsedQuery is a user query split into what search understands: people and
// addresses (entity ids), a time window, and the remaining words.
type ParsedQuery struct {
	Raw      string
	Entities []string // canonical entity ids named by the query (resolved later)
	Names    []string // folded person names, for a phrase match on text
	Emails   []string // addresses in the query
	From, To int64    // time window [From, To) in epoch ms; To == 0: none
	Text     string   // the rest
	// Resolved says which names and addresses of the query were read as an
	// address book's contacts, and as which entities (Filter "query").
	Resolved []abi.Resolution
	// Speakers are the folded names the contacts the query names write under
	// ("mick", "micah s"): their chat turns are the named participant's.
	Speakers []string
}

var months = map[string]time.Month{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
	"august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
	"oct": 10, "nov": 11, "dec": 12,
}

const monthAlt = `january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec`

var (
	reISODay   = lazyre.New(`\b(\d{4})-(\d{1,2})-(\d{1,2})\b`)
	reISOMonth = lazyre.New(`\b(\d{4})-(\d{1,2})\b`)
	// [prep] month [day][,] [year]
	reMonthName = lazyre.New(`(?i)\b(?:(in|during|from|since|of|on|throughout)\s+)?(` + monthAlt + `)\b\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{4})\b)?`)
	// [prep] day month [year]
	reDayMonth = lazyre.New(`(?i)\b(?:(on|from|since)\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(` + monthAlt + `)\b(?:,?\s+(\d{4})\b)?`)
	reYearOnly = lazyre.New(`\b(?:(in|during|from|of|throughout)\s+)?((?:19|20)\d{2})\b`)
)

// parseDates finds one date or month phrase in q and returns the window and q without
// the phrase. latest is the newest timestamp in the store (years are inferred from it
// when the phrase names none).
func parseDates(q string, latest int64) (from, to int64, rest string) {
	if latest == 0 {
		latest = time.Now().UnixMilli()
	}
	lt := time.UnixMilli(latest).UTC()
	inferYear := func(m time.Month) int {
		y := lt.Year()
		if m > lt.Month() {
			y--
		}
		return y
	}
	cut := func(loc []int) string { return strings.TrimSpace(q[:loc[0]] + " " + q[loc[1]:]) }
	validDay := func(y int, m time.Month, d int) bool {
		return d >= 1 && d <= time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	}
	if m := reISODay.FindStringSubmatchIndex(q); m != nil {
		y, _ := strconv.Atoi(q[m[2]:m[3]])
		mo, _ := strconv.Atoi(q[m[4]:m[5]])
		d, _ := strconv.Atoi(q[m[6]:m[7]])
		if mo >= 1 && mo <= 12 && validDay(y, time.Month(mo), d) {
			t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
			return t.UnixMilli(), t.AddDate(0, 0, 1).UnixMilli(), cut(m)
		}
	}
	if m := reISOMonth.FindStringSubmatchIndex(q); m != nil {
		y, _ := strconv.Atoi(q[m[2]:m[3]])
		mo, _ := strconv.Atoi(q[m[4]:m[5]])
		if mo >= 1 && mo <= 12 {
			t := time.Date(y, time.Month(mo), 1, 0, 0, 0, 0, time.UTC)
			return t.UnixMilli(), t.AddDate(0, 1, 0).UnixMilli(), cut(m)
		}
	}
	if m := reDayMonth.FindStringSubmatchIndex(q); m != nil {
		d, _ := strconv.Atoi(q[m[4]:m[5]])
		mo := months[strings.ToLower(q[m[6]:m[7]])]
		y := inferYear(mo)
		if m[8] >= 0 {
			y, _ = strconv.Atoi(q[m[8]:m[9]])
		}
		if validDay(y, mo, d) {
			t := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
			return t.UnixMilli(), t.AddDate(0, 0, 1).UnixMilli(), cut(m)
		}
	}
	for _, m := range reMonthName.FindAllStringSubmatchIndex(q, -1) {
		name := strings.ToLower(q[m[4]:m[5]])
		hasPrep, hasDay, hasYear := m[2] >= 0, m[6] >= 0, m[8] >= 0
		// Short or ambiguous month words ("may", "mar", "dec") need context.
		if (name == "may" || len(name) <= 4) && !hasPrep && !hasDay && !hasYear {
			continue
		}
		mo := months[name]
		y := inferYear(mo)
		if hasYear {
			y, _ = strconv.Atoi(q[m[8]:m[9]])
		}
		if hasDay {
			d, _ := strconv.Atoi(q[m[6]:m[7]])
			if validDay(y, mo, d) {
				t := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
				return t.UnixMilli(), t.AddDate(0, 0, 1).UnixMilli(), cut(m)
			}
		}
		t := time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC)
		return t.UnixMilli(), t.AddDate(0, 1, 0).UnixMilli(), cut(m)
	}
	if m := reYearOnly.FindStringSubmatchIndex(q); m != nil && m[2] >= 0 {
		y, _ := strconv.Atoi(q[m[4]:m[5]])
		t := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		return t.UnixMilli(), t.AddDate(1, 0, 0).UnixMilli(), cut(m)
	}
	return 0, 0, q
}

// Bounds of the notes saying which contacts a query named (the search itself
// uses every entity of every contact named): at most maxResolvedNames names,
// each with at most maxResolvedIDs ids, then how many more.
const (
	maxResolvedNames = 10
	maxResolvedIDs   = 40
)

// ParseQuery extracts addresses, people known to the store and a date phrase.
// With an address book (index.Contacts) a contact's name, nickname, address or
// handle, one word too ("Micah", "Mick"), stands for every entity of that
// person, and ParsedQuery.Resolved says so.
func ParseQuery(ctx context.Context, q string, st index.Backend) (ParsedQuery, error) {
	p := ParsedQuery{Raw: q}
	var lookupErr error
	book, _ := st.(index.Contacts)
	seen := map[string]bool{}
	addEntities := func(ids []string) {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				p.Entities = append(p.Entities, id)
			}
		}
	}
	// contact adds the entities of the contacts key names, and says so.
	contact := func(key, value string) bool {
		if book == nil {
			return false
		}
		if lookupErr != nil {
			return false
		}
		people, ids, err := book.Contact(ctx, key)
		if err != nil {
			lookupErr = fmt.Errorf("contact %q: %w", key, err)
			return false
		}
		if len(people) == 0 && len(ids) == 0 {
			return false
		}
		to := append([]string(nil), people...)
		for _, id := range ids {
			if !slices.Contains(to, id) {
				to = append(to, id)
			}
		}
		addEntities(to)
		for _, id := range to {
			if rest, ok := strings.CutPrefix(id, "person:"); ok {
				if n := strings.Join(analysis.Words(rest), " "); n != "" && !slices.Contains(p.Speakers, n) {
					p.Speakers = append(p.Speakers, n)
				}
			}
		}
		if len(p.Resolved) < maxResolvedNames {
			if len(to) > maxResolvedIDs {
				to = append(to[:maxResolvedIDs:maxResolvedIDs], fmt.Sprintf("… and %d more", len(to)-maxResolvedIDs))
			}
			p.Resolved = append(p.Resolved, abi.Resolution{Filter: "query", Value: value, To: to})
		}
		return true
	}
	rest := q
	for _, loc := range analysis.EmailRE.FindAllStringIndex(rest, -1) {
		a := strings.ToLower(rest[loc[0]:loc[1]])
		p.Emails = append(p.Emails, a)
		addEntities([]string{"email:" + a})
		contact("email:"+a, rest[loc[0]:loc[1]])
	}
	rest = analysis.EmailRE.ReplaceAllString(rest, " ")
	p.From, p.To, rest = parseDates(rest, st.Stats().Latest)
	// People: longest known name first (3 then 2 words); a contact's name of
	// one word too (not a stopword: a contact called "Will").
	ws := analysis.Words(rest)
	used := make([]bool, len(ws))
	for n := 3; n >= 1; n-- {
		for i := 0; i+n <= len(ws); i++ {
			free := true
			for j := i; j < i+n; j++ {
				free = free && !used[j]
			}
			if !free {
				continue
			}
			name := strings.Join(ws[i:i+n], " ")
			found := false
			if n >= 2 {
				if ids, ok := st.People(name); ok {
					addEntities(ids)
					found = true
				}
			}
			if (n >= 2 || !analysis.Stopwords[name]) && contact(name, name) {
				found = true
			}
			if found {
				p.Names = append(p.Names, name)
				for j := i; j < i+n; j++ {
					used[j] = true
				}
			}
		}
	}
	if len(p.Names) > 0 {
		var kept []string
		for i, w := range ws {
			if !used[i] {
				kept = append(kept, w)
			}
		}
		rest = strings.Join(kept, " ")
	}
	p.Text = rest
	sort.Strings(p.Entities)
	return p, lookupErr
}

// QueryTerms turns free text into distinct content terms with document
// frequencies, dropping stopwords and terms found in no chunk.
func QueryTerms(ctx context.Context, st index.Backend, text string) ([]Term, error) {
	var out []Term
	seen := map[string]bool{}
	for _, w := range analysis.Words(text) {
		if analysis.Stopwords[w] || len(w) < 2 && !IsDigits(w) {
			continue
		}
		sm := analysis.Stem(w)
		if seen[sm] {
			continue
		}
		seen[sm] = true
		df, err := st.DocFreq(ctx, w)
		if err != nil {
			return nil, err
		}
		if df == 0 {
			continue
		}
		out = append(out, Term{Word: w, Stem: sm, DF: df, Weight: 1})
	}
	return out, nil
}
