package retrieval

import "testing"

// TestAsksWhen: questions about when something happened, and others.
func TestAsksWhen(t *testing.T) {
	for q, want := range map[string]bool{
		"When did Melanie go camping?":               true,
		"when is the review":                         true,
		"How long ago was Caroline's 18th birthday?": true,
		"In which year did Tim start the band?":      true,
		"What did Maria say about the dinner?":       false,
		"Where did Joanna travel to in July 2022?":   false,
		"whenever you can":                           false,
	} {
		if got := AsksWhen(q); got != want {
			t.Errorf("AsksWhen(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestSaysWhen: turns that tell a time, and others.
func TestSaysWhen(t *testing.T) {
	for s, want := range map[string]bool{
		"We went camping last week, it was great!": true,
		"I started two months ago.":                true,
		"Back in May we moved.":                    false, // "may" is a verb too often
		"Back in June we moved.":                   true,
		"That was in 2019.":                        true,
		"I did it yesterday":                       true,
		"I love camping with the kids.":            false,
		"We meet on Friday":                        true, // a weekday after "on"
	} {
		if got := SaysWhen(s); got != want {
			t.Errorf("SaysWhen(%q) = %v, want %v", s, got, want)
		}
	}
}
