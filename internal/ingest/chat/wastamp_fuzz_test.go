package chat

import (
	"strings"
	"testing"
	"time"
)

// FuzzWhatsAppStamp: the header reader never panics, what it leaves as the rest
// is the line's own tail, and a time it makes is between 1980 and 2200.
func FuzzWhatsAppStamp(f *testing.F) {
	for _, s := range []string{
		"[١٨\u200f/٣\u200f/٢٠٢٢، ٢:٥٦:٠٠ م] أحمد: مرحبا", "7/1/16, 5:13:36 PM: Sophia H.: x", "[14:56:01, 3/18/22] Lan: x",
		"[3/18/2565 BE, 2:56:01 PM] S: x", "[3/18/R4, 14:56:01] T: x", "2022/12/14, 13:34. - K: x", "2022년 3월 18일 오후 2:56, 민수 : 안녕",
		"[1/30/18, 00:04:03 AM] Dave: no", "18.3.2022 klo 14.56 - M: x", "۱۴۰۱/۰۱/۰۱، ۱۴:۳۰ - علی: سلام", "1/9/1443, 20:00 - O: x",
		"[", "R", "9999/99/99 99:99 - :", "\u2066[\u2069", "[1.1.1 1:11 ", "00/00/00, 00:00 - a: b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var buf waBuf
		st, ok, _ := waParse(line, &buf)
		if !ok {
			return
		}
		if !strings.HasSuffix(line, st.rest) {
			t.Fatalf("rest %q is not a tail of %q", st.rest, line)
		}
		lay := waResolve([]waHead{{st: st, ok: true}})
		ms, err := waTime(&st, &lay)
		if err != nil {
			return
		}
		if y := time.UnixMilli(ms).Year(); y < 1979 || y > 2201 {
			t.Fatalf("%q → year %d", line, y)
		}
	})
}
