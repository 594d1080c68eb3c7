package retrieval

import (
	"testing"
	"time"
)

// A month name is a whole word: "Maria", "Marching", "Junior" or "Decker" after a
// preposition are not March, June or December, and the query keeps them.
func TestParseDatesMonthIsAWholeWord(t *testing.T) {
	latest := time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, q := range []string{
		"What is the name of Maria's second puppy?",
		"photos of Marching band",
		"gift from Junior",
		"call on Decker street",
	} {
		if from, to, rest := parseDates(q, latest); from != 0 || to != 0 || rest != q {
			t.Errorf("parseDates(%q) = %d, %d, %q; want no date and the query whole", q, from, to, rest)
		}
	}
	for q, want := range map[string]time.Month{
		"book club in March":     time.March,
		"invoice from Mar. 2026": time.March,
		"the offsite on Dec 3":   time.December,
		"what happened in june":  time.June,
		"trip during Sept, 2025": time.September,
	} {
		from, _, _ := parseDates(q, latest)
		if from == 0 || time.UnixMilli(from).UTC().Month() != want {
			t.Errorf("parseDates(%q) from %v, want a window in %s", q, time.UnixMilli(from).UTC(), want)
		}
	}
}
