package retrieval

import "github.com/openhuman/openhuman-core/internal/lazyre"

// Questions about time (issue 30, item 3). A question asking when something
// happened is answered by the turn that tells the event with its time: "we went
// camping last week", "I started two months ago", "back in May". In the LoCoMo
// conversations 76 % of the evidence turns of temporal questions carry such an
// expression against 10 % of all turns (measured over the five conversations'
// texts, not tuned on their questions). A when-question's turns that say a time
// expression and the query's words (or answer a turn that does) score more
// (Params.TimeBoost); the turn's date stays visible in its cited message
// ("Author (date): text"). The patterns compile on first use (internal/lazyre).

var (
	reAsksWhen = lazyre.New(`(?i)(^|[.?!]\s*)when\b|\bwhen (did|was|is|were|will|does|do|has|had|are)\b|\bhow long ago\b|\bhow long (has|have|had|did|was|were)\b|\b(what|which) (year|month|day|date|week|weekend|time of year)\b|\bsince when\b`)
	reSaysWhen = lazyre.New(`(?i)\b(yesterday|today|tonight|tomorrow|recently|lately|the other day|` +
		`(last|this|next|past) (night|morning|evening|week|weekend|month|year|summer|winter|spring|fall|autumn|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|` +
		`(a|an|one|two|three|four|five|six|few|couple of|several|\d+) (days?|weeks?|months?|years?) ago|` +
		`(on|since|until) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|` +
		`(january|february|march|april|june|july|august|september|october|november|december)|` +
		`(19|20)\d\d)\b`)
)

// AsksWhen says whether a query asks when something happened (or how long ago).
func AsksWhen(query string) bool { return reAsksWhen.Get().MatchString(query) }

// SaysWhen says whether a turn's text tells a time: a relative expression
// (yesterday, last week, two months ago, this weekend), a weekday after on/since,
// a month name or a year.
func SaysWhen(text string) bool { return reSaysWhen.Get().MatchString(text) }
