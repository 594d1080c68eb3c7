package chat

import "testing"

// FuzzWhatsAppHeader parses arbitrary lines as WhatsApp headers: never a panic,
// and a header it reads has a month name's number in range.
func FuzzWhatsAppHeader(f *testing.F) {
	for _, s := range []string{"19:23, 28 Aug 2013 - Ann: hi", "Aug 28, 2013, 7:23 PM - A: b", "28 de agosto de 2013, 19:23 - A: b",
		"28/08/2013, 3:07 in the afternoon - A: b", "2013/8/28 凌晨2:00 - 王: a", "May I ask: why?", "Sept 2 - x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var buf waBuf
		st, ok, _ := waParse(line, &buf)
		if ok && st.MonPos >= 0 && (st.N[st.MonPos] < 1 || st.N[st.MonPos] > 12) {
			t.Fatalf("month %d read from %q", st.N[st.MonPos], line)
		}
	})
}
