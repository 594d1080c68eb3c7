package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// waWant is one message a layout fixture must yield.
type waWant struct {
	author, text       string
	y, mo, d, h, mi, s int
}

// TestWhatsAppLayouts reads one small export per timestamp layout WhatsApp writes
// (locales, app versions, digit systems, calendars, clocks) and checks every
// message's author, time and text. The fixtures reproduce the patterns of real
// exports; none is a copied file.
func TestWhatsAppLayouts(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          []waWant
		guessed       bool // a "guessed day/month" warning is expected
		unresolved    bool // a warning about clock words the file cannot tell is expected
		events        int  // lines without an author, named in one warning
	}{
		{name: "ios 2016 without brackets or dash",
			content: "7/1/16, 5:13:36 PM: Sophia H.: Hello there\n7/13/16, 9:02:11 AM: Max: Morning: all good?\nsecond line\n",
			want:    []waWant{{"Sophia H.", "Hello there", 2016, 7, 1, 17, 13, 36}, {"Max", "Morning: all good?\nsecond line", 2016, 7, 13, 9, 2, 11}}},
		{name: "arabic-indic digits with right-to-left marks and arabic comma",
			content: "[١٨\u200f/٣\u200f/٢٠٢٢، ٢:٥٦:٠٠ م] أحمد: مرحبا\n[١٩\u200f/٣\u200f/٢٠٢٢، ٩:٠٥:٠٠ ص] سارة: أهلا\n",
			want:    []waWant{{"أحمد", "مرحبا", 2022, 3, 18, 14, 56, 0}, {"سارة", "أهلا", 2022, 3, 19, 9, 5, 0}}},
		{name: "persian digits and solar hijri years",
			content: "۱۴۰۱/۰۱/۰۱، ۱۴:۳۰ - علی: سلام\n۱۴۰۱/۰۱/۱۵، ۰۸:۰۵ - مریم: درود\n",
			want:    []waWant{{"علی", "سلام", 2022, 3, 21, 14, 30, 0}, {"مریم", "درود", 2022, 4, 4, 8, 5, 0}}},
		{name: "devanagari digits with hindi am/pm words",
			content: "१८/३/२२, २:५६ अपराह्न - राम: नमस्ते\n१९/३/२२, ११:०१ पूर्वाह्न - सीता: हाँ\n",
			want:    []waWant{{"राम", "नमस्ते", 2022, 3, 18, 14, 56, 0}, {"सीता", "हाँ", 2022, 3, 19, 11, 1, 0}}},
		{name: "bengali digits 24h",
			content: "১৮/০৩/২২, ১৪:৫৬ - রহিম: হ্যালো\n২০/০৩/২২, ০৯:১০ - করিম: ঠিক আছে\n",
			want:    []waWant{{"রহিম", "হ্যালো", 2022, 3, 18, 14, 56, 0}, {"করিম", "ঠিক আছে", 2022, 3, 20, 9, 10, 0}}},
		{name: "vietnamese time first",
			content: "[14:56:01, 3/18/22] Lan: xin chào\n[08:00:00, 3/19/22] Minh: chào\n",
			want:    []waWant{{"Lan", "xin chào", 2022, 3, 18, 14, 56, 1}, {"Minh", "chào", 2022, 3, 19, 8, 0, 0}}},
		{name: "vietnamese SA/CH",
			content: "[18/3/22 2:56:01 CH] Lan: chiều\n[19/3/22 10:00:00 SA] Minh: sáng\n",
			want:    []waWant{{"Lan", "chiều", 2022, 3, 18, 14, 56, 1}, {"Minh", "sáng", 2022, 3, 19, 10, 0, 0}}},
		{name: "buddhist era years",
			content: "[3/18/2565 BE, 2:56:01 PM] Somchai: hi\n[3/19/2565 BE, 7:00:00 AM] Malee: morning\n",
			want:    []waWant{{"Somchai", "hi", 2022, 3, 18, 14, 56, 1}, {"Malee", "morning", 2022, 3, 19, 7, 0, 0}}},
		{name: "buddhist years without the era word",
			content: "18/3/2565 14:56 - Somchai: no era word\n",
			want:    []waWant{{"Somchai", "no era word", 2022, 3, 18, 14, 56, 0}}},
		{name: "japanese era years",
			content: "[3/18/R4, 14:56:01] Taro: こんにちは\n",
			want:    []waWant{{"Taro", "こんにちは", 2022, 3, 18, 14, 56, 1}}},
		{name: "japanese era year first",
			content: "[H30/12/31 23:59:59] Hanako: 平成最後\n[H31/1/1 0:00:01] Taro: 新年\n",
			want:    []waWant{{"Hanako", "平成最後", 2018, 12, 31, 23, 59, 59}, {"Taro", "新年", 2019, 1, 1, 0, 0, 1}}},
		{name: "japanese am/pm word before the time",
			content: "2022/03/18 午後2:56 - 太郎: テスト\n2022/03/19 午前0:05 - 花子: 夜中\n2022/03/19 午後0:30 - 太郎: 昼\n",
			want:    []waWant{{"太郎", "テスト", 2022, 3, 18, 14, 56, 0}, {"花子", "夜中", 2022, 3, 19, 0, 5, 0}, {"太郎", "昼", 2022, 3, 19, 12, 30, 0}}},
		{name: "korean year/month/day words and am/pm",
			content: "2022년 3월 18일 오후 2:56, 민수 : 안녕\n[2022. 3. 19. 오전 9:01:02] 지영: 좋아\n",
			want:    []waWant{{"민수", "안녕", 2022, 3, 18, 14, 56, 0}, {"지영", "좋아", 2022, 3, 19, 9, 1, 2}}},
		{name: "year first with a dot after the time",
			content: "2022/12/14, 13:34. - Ken: hi\n2022/12/15, 09:00. - Mia: hey\n",
			want:    []waWant{{"Ken", "hi", 2022, 12, 14, 13, 34, 0}, {"Mia", "hey", 2022, 12, 15, 9, 0, 0}}},
		{name: "iso dates without a guess",
			content: "2020-01-02 10:00 - Ann: x\n2020-01-03 11:00 - Ben: y\n",
			want:    []waWant{{"Ann", "x", 2020, 1, 2, 10, 0, 0}, {"Ben", "y", 2020, 1, 3, 11, 0, 0}}},
		{name: "hour zero of a 12-hour clock",
			content: "[1/30/18, 00:04:03 AM] Dave: no\n[1/30/18, 0:24:00 PM] Bob: yes\n1/30/18, 12:10 AM - Eve: after midnight\n1/30/18, 12:10 PM - Eve: noon\n",
			want:    []waWant{{"Dave", "no", 2018, 1, 30, 0, 4, 3}, {"Bob", "yes", 2018, 1, 30, 12, 24, 0}, {"Eve", "after midnight", 2018, 1, 30, 0, 10, 0}, {"Eve", "noon", 2018, 1, 30, 12, 10, 0}}},
		{name: "spanish a. m. and p. m. with no-break spaces",
			content: "14/1/2020, 00:08\u00a0a.\u00a0m. - Ana: hola\n14/1/2020, 1:15\u202fp.\u202fm. - Luis: qué tal\n15/1/2020 11:30 p.m. - Ana: noche\n",
			want:    []waWant{{"Ana", "hola", 2020, 1, 14, 0, 8, 0}, {"Luis", "qué tal", 2020, 1, 14, 13, 15, 0}, {"Ana", "noche", 2020, 1, 15, 23, 30, 0}}},
		{name: "arabic am/pm words in latin digits",
			content: "18/03/2022, 2:56 م - Omar: x\n19/03/2022, 9:56 ص - Omar: y\n",
			want:    []waWant{{"Omar", "x", 2022, 3, 18, 14, 56, 0}, {"Omar", "y", 2022, 3, 19, 9, 56, 0}}},
		{name: "unknown am/pm words told by the file's own times",
			content: "18/03/2022, 8:00 ጥዋት - Abebe: a\n18/03/2022, 3:00 ከሰዓት - Abebe: b\n19/03/2022, 9:00 ጥዋት - Abebe: c\n19/03/2022, 4:00 ከሰዓት - Abebe: d\n",
			want:    []waWant{{"Abebe", "a", 2022, 3, 18, 8, 0, 0}, {"Abebe", "b", 2022, 3, 18, 15, 0, 0}, {"Abebe", "c", 2022, 3, 19, 9, 0, 0}, {"Abebe", "d", 2022, 3, 19, 16, 0, 0}}},
		{name: "finnish klo and dotted time",
			content: "18.3.2022 klo 14.56 - Matti: moi\n19.3.2022 klo 9.05 - Liisa: hei\n",
			want:    []waWant{{"Matti", "moi", 2022, 3, 18, 14, 56, 0}, {"Liisa", "hei", 2022, 3, 19, 9, 5, 0}}},
		{name: "bidi isolates and embeddings around every part",
			content: "\u2068[\u206618/03/2022,\u2069 \u202a14:56:01\u202c]\u2069 \u202bنور\u202c: نص\n\u200e[19/03/2022, 08:00:00] ~\u202fYSL: Zdravíme\n",
			want:    []waWant{{"نور", "نص", 2022, 3, 18, 14, 56, 1}, {"YSL", "Zdravíme", 2022, 3, 19, 8, 0, 0}}},
		{name: "day/month told by time order, no day over 12",
			content: "01/02/2020, 10:00 - A: a\n03/02/2020, 10:00 - B: b\n05/02/2020, 10:00 - A: c\n02/03/2020, 10:00 - B: d\n",
			want:    []waWant{{"A", "a", 2020, 2, 1, 10, 0, 0}, {"B", "b", 2020, 2, 3, 10, 0, 0}, {"A", "c", 2020, 2, 5, 10, 0, 0}, {"B", "d", 2020, 3, 2, 10, 0, 0}}},
		{name: "dashed 2-digit dates told apart from year first",
			content: "[15-01-20 02:22:56] Mary: one\n[16-01-20 03:00:00] Joe: two\n",
			want:    []waWant{{"Mary", "one", 2020, 1, 15, 2, 22, 56}, {"Joe", "two", 2020, 1, 16, 3, 0, 0}}},
		{name: "group events counted, never glued",
			content: "13/01/2020, 10:00 - Messages and calls are end-to-end encrypted. No one outside of this chat can read them.\n" +
				"13/01/2020, 10:00 - Alice created group \"Trip: 2020\"\n13/01/2020, 10:01 - Alice added Bob\n" +
				"13/01/2020, 10:02 - Bob: hi\n13/01/2020, 10:03 - Your security code with Carol changed. Tap to learn more.\n" +
				"13/01/2020, 10:04 - Alice hat Bob hinzugefügt.\n13/01/2020, 10:05 - Bob left\n13/01/2020, 10:06 - Alice: bye\n",
			want:   []waWant{{"Bob", "hi", 2020, 1, 13, 10, 2, 0}, {"Alice", "bye", 2020, 1, 13, 10, 6, 0}},
			events: 6},
		{name: "a timestamped line of another layout is its own entry",
			content: "[13/01/2020, 10:00:00] Alice: question?\n13/01/2020 10:01 Dave refuses\n[13/01/2020, 10:02:00] Bob: ok\n",
			want:    []waWant{{"Alice", "question?", 2020, 1, 13, 10, 0, 0}, {"", "13/01/2020 10:01 Dave refuses", 2020, 1, 13, 10, 0, 0}, {"Bob", "ok", 2020, 1, 13, 10, 2, 0}}},
		{name: "year first with a 12-hour clock and a colon after the time",
			content: "2016-06-27, 8:04:08 AM: Neil: Hi\n2016-06-28, 12:00:00 AM: Ann: midnight\n",
			want:    []waWant{{"Neil", "Hi", 2016, 6, 27, 8, 4, 8}, {"Ann", "midnight", 2016, 6, 28, 0, 0, 0}}},
		{name: "old layout without comma or brackets",
			content: "09/12/2012 17:03:48: Sender Name: Message\n24/12/2012 09:00:00: Other: x\n",
			want:    []waWant{{"Sender Name", "Message", 2012, 12, 9, 17, 3, 48}, {"Other", "x", 2012, 12, 24, 9, 0, 0}}},
		{name: "canadian french hours",
			content: "2022-03-18 18 h 30 - Élise: bonjour\n2022-03-19 9 h 05 - Marc: salut\n",
			want:    []waWant{{"Élise", "bonjour", 2022, 3, 18, 18, 30, 0}, {"Marc", "salut", 2022, 3, 19, 9, 5, 0}}},
		{name: "swedish kl. connector with morning times only",
			content: "2022-03-18 kl. 09:30 - Lars: hej\n2022-03-19 kl. 10:05 - Eva: tja\n",
			want:    []waWant{{"Lars", "hej", 2022, 3, 18, 9, 30, 0}, {"Eva", "tja", 2022, 3, 19, 10, 5, 0}}},
		{name: "islamic (hijri) years",
			// the arithmetic calendar: a phone's Umm al-Qura date may differ by a day
			content: "1/9/1443, 20:00 - Omar: رمضان كريم\n15/9/1443, 21:00 - Omar: x\n",
			want:    []waWant{{"Omar", "رمضان كريم", 2022, 4, 3, 20, 0, 0}, {"Omar", "x", 2022, 4, 17, 21, 0, 0}}},
		{name: "nothing but a space after the time",
			content: "13. 6. 2018. 21:25:15 Luke: hi\n13. 6. 2018. 21:26:00 Leia Organa: hello: there\n14. 6. 2018. 08:00:00 Han: ok\n14. 6. 2018. 08:01:00 Han added Chewie\n",
			want:    []waWant{{"Luke", "hi", 2018, 6, 13, 21, 25, 15}, {"Leia Organa", "hello: there", 2018, 6, 13, 21, 26, 0}, {"Han", "ok", 2018, 6, 14, 8, 0, 0}},
			events:  1},
		{name: "nothing but a space after the time, names that are no words",
			content: "13. 6. 2018. 21:25:15 +385 91 123 4567: hi\n13. 6. 2018. 21:26:00 +385 98 765 4321: hello\n",
			want:    []waWant{{"+385 91 123 4567", "hi", 2018, 6, 13, 21, 25, 15}, {"+385 98 765 4321", "hello", 2018, 6, 13, 21, 26, 0}}},
		{name: "year in the middle",
			content: "[06/2018/13, 21:25:15] a: m\n[07/2018/01, 09:00:00] b: n\n",
			want:    []waWant{{"a", "m", 2018, 6, 13, 21, 25, 15}, {"b", "n", 2018, 7, 1, 9, 0, 0}}},
		{name: "attachment with spaces inside the brackets",
			content: "3/6/18, 1:55 p.m. - a: < attached: 00000042-PHOTO-2020-06-07-15-13-20.jpg >\n3/6/18, 1:56 p.m. - a: m\n13/6/18, 1:56 p.m. - a: x\n",
			want:    []waWant{{"a", "< attached: 00000042-PHOTO-2020-06-07-15-13-20.jpg >", 2018, 6, 3, 13, 55, 0}, {"a", "m", 2018, 6, 3, 13, 56, 0}, {"a", "x", 2018, 6, 13, 13, 56, 0}}},
		{name: "one unknown clock word that the times cannot tell",
			content: "18/03/2022, 8:00 ጥዋት - Abebe: a\n19/03/2022, 9:00 ጥዋት - Abebe: b\n",
			want:    []waWant{{"Abebe", "a", 2022, 3, 18, 8, 0, 0}, {"Abebe", "b", 2022, 3, 19, 9, 0, 0}}, unresolved: true},
		{name: "old android, time first and the month by name",
			content: "19:23, 28 Aug 2013 - Ann: hello\n19:25, 28 Aug 2013 - Bob: hi, you\n08:01, 1 Sep 2013 - Ann: morning\n",
			want:    []waWant{{"Ann", "hello", 2013, 8, 28, 19, 23, 0}, {"Bob", "hi, you", 2013, 8, 28, 19, 25, 0}, {"Ann", "morning", 2013, 9, 1, 8, 1, 0}}},
		{name: "month name first with a 12-hour clock",
			content: "Aug 28, 2013, 7:23 PM - Ann: hi\nSept 2, 2013, 8:00 AM - Bob: yo\n",
			want:    []waWant{{"Ann", "hi", 2013, 8, 28, 19, 23, 0}, {"Bob", "yo", 2013, 9, 2, 8, 0, 0}}},
		{name: "german month names with dots",
			content: "28. Aug. 2013, 19:23 - Anna: hallo\n1. März 2014, 08:00 - Ben: na\n",
			want:    []waWant{{"Anna", "hallo", 2013, 8, 28, 19, 23, 0}, {"Ben", "na", 2014, 3, 1, 8, 0, 0}}},
		{name: "spanish month names with de",
			content: "28 de agosto de 2013, 19:23 - Ana: hola\n2 de sept. de 2013, 9:05 - Luis: qué tal\n",
			want:    []waWant{{"Ana", "hola", 2013, 8, 28, 19, 23, 0}, {"Luis", "qué tal", 2013, 9, 2, 9, 5, 0}}},
		{name: "russian month abbreviations and dashed names",
			content: "28 авг. 2013, 19:23 - Иван: привет\n[02-Sep-2013 21:00:00] Олег: да\n",
			want:    []waWant{{"Иван", "привет", 2013, 8, 28, 19, 23, 0}, {"Олег", "да", 2013, 9, 2, 21, 0, 0}}},
		{name: "english day periods as phrases",
			content: "28/08/2013, 3:07 in the afternoon - Ann: tea\n28/08/2013, 9:15 in the evening - Bob: night\n29/08/2013, 7:00 in the morning - Ann: up\n" +
				"29/08/2013, 11:30 at night - Bob: late\n30/08/2013, 12:10 at night - Bob: very late\n30/08/2013, 2:00 at night - Ann: later\n",
			want: []waWant{{"Ann", "tea", 2013, 8, 28, 15, 7, 0}, {"Bob", "night", 2013, 8, 28, 21, 15, 0}, {"Ann", "up", 2013, 8, 29, 7, 0, 0},
				{"Bob", "late", 2013, 8, 29, 23, 30, 0}, {"Bob", "very late", 2013, 8, 30, 0, 10, 0}, {"Ann", "later", 2013, 8, 30, 2, 0, 0}}},
		{name: "spanish day periods",
			content: "28/8/13 3:07 de la tarde - Ana: x\n28/8/13 10:00 de la noche - Luis: y\n29/8/13 6:30 de la mañana - Ana: z\n",
			want:    []waWant{{"Ana", "x", 2013, 8, 28, 15, 7, 0}, {"Luis", "y", 2013, 8, 28, 22, 0, 0}, {"Ana", "z", 2013, 8, 29, 6, 30, 0}}},
		{name: "chinese day periods before the time",
			content: "2013/8/28 凌晨2:00 - 王: a\n2013/8/28 中午12:30 - 李: b\n2013/8/28 下午3:00 - 王: c\n2013/8/28 晚上9:00 - 李: d\n",
			want:    []waWant{{"王", "a", 2013, 8, 28, 2, 0, 0}, {"李", "b", 2013, 8, 28, 12, 30, 0}, {"王", "c", 2013, 8, 28, 15, 0, 0}, {"李", "d", 2013, 8, 28, 21, 0, 0}}},
		{name: "three unknown day periods told by the order of the day",
			content: "28/08/2013, 9:00 di mattina - A: a\n28/08/2013, 3:00 di pomeriggio - B: b\n28/08/2013, 8:00 di sera - A: c\n" +
				"29/08/2013, 10:00 di mattina - B: d\n29/08/2013, 5:00 di pomeriggio - A: e\n",
			want: []waWant{{"A", "a", 2013, 8, 28, 9, 0, 0}, {"B", "b", 2013, 8, 28, 15, 0, 0}, {"A", "c", 2013, 8, 28, 20, 0, 0},
				{"B", "d", 2013, 8, 29, 10, 0, 0}, {"A", "e", 2013, 8, 29, 17, 0, 0}}},
		{name: "ambiguous order guessed",
			content: "01/02/2020, 10:00 - Ann: x\n",
			want:    []waWant{{"Ann", "x", 2020, 2, 1, 10, 0, 0}}, guessed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := readertest.WriteFile(t, "chat.txt", c.content)
			out, rep := readertest.Run(t, chat.WhatsAppReader{}, p)
			var got []string
			for _, s := range out.Sources {
				for _, m := range s.Messages {
					got = append(got, waFmtMsg(m.Author, m.Text, m.TimestampMS))
				}
			}
			var want []string
			for _, w := range c.want {
				want = append(want, waFmtMsg(w.author, w.text, readertest.LocalMS(w.y, w.mo, w.d, w.h, w.mi, w.s)))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if rep.Sum.Failures != 0 {
				t.Errorf("failures %v", rep.Sum.Errors)
			}
			if g := readertest.HasNote(rep, false, "guessed"); g != c.guessed {
				t.Errorf("guessed warning %v, want %v: %v", g, c.guessed, rep.Sum.Notes)
			}
			if readertest.HasNote(rep, false, "no known AM/PM words") != c.unresolved {
				t.Errorf("unresolved clock words: %v", rep.Sum.Notes)
			}
			if c.events > 0 && !readertest.HasNote(rep, false, strconv.Itoa(c.events)+" line(s) without an author") {
				t.Errorf("want %d events named: %v", c.events, rep.Sum.Notes)
			}
		})
	}
}

func waFmtMsg(author, text string, ms int64) string {
	return author + " @" + strconv.FormatInt(ms, 10) + ": " + text
}

// TestWhatsAppIOSGroupEvents: iOS writes a group's events under the group's name
// with U+200E before the text; the file (renamed) does not say the group's name.
func TestWhatsAppIOSGroupEvents(t *testing.T) {
	p := readertest.WriteFile(t, "renamed.txt", "[18/03/2022, 14:00:00] Trip 2022: \u200eMessages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or listen to them.\n"+
		"[18/03/2022, 14:00:01] Trip 2022: \u200eAlice created this group\n"+
		"[18/03/2022, 14:00:02] Trip 2022: \u200eAlice added Bob\n"+
		"[18/03/2022, 14:01:00] Alice: welcome\n"+
		"[18/03/2022, 14:02:00] Bob: \u200eimage omitted\n")
	out, rep := readertest.Run(t, chat.WhatsAppReader{}, p)
	msgs := readertest.Messages(t, out)
	if len(msgs) != 2 {
		t.Errorf("%d messages, want 2: %v", len(msgs), msgs)
	}
	if !readertest.HasNote(rep, false, "3 line(s) without an author") {
		t.Errorf("warnings %v", rep.Sum.Notes)
	}
}

// TestWhatsAppForcedKind ingests a folder of exports of several layouts (one
// without the .txt extension, one saved as UTF-16) into a real store with
// --kind whatsapp, and with detection: every file is read as WhatsApp.
func TestWhatsAppForcedKind(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"WhatsApp Chat with Sophia.txt": "7/1/16, 5:13:36 PM: Sophia H.: Hello\n7/13/16, 9:02:11 AM: Max: hi\n",
		"chat-ar.txt":                   "[١٨\u200f/٣\u200f/٢٠٢٢، ٢:٥٦:٠٠ م] أحمد: مرحبا\n",
		"vi.txt":                        "[14:56:01, 3/18/22] Lan: xin chào\n",
		"export":                        "[3/18/R4, 14:56:01] Taro: こんにちは\n",
	}
	for name, content := range files {
		waWriteFile(t, filepath.Join(dir, name), content)
	}
	// UTF-16 little-endian with a byte-order mark
	u16 := []byte{0xFF, 0xFE}
	for _, r := range "2022/12/14, 13:34. - Ken: hi\n" {
		u16 = append(u16, byte(r), byte(r>>8))
	}
	if err := os.WriteFile(filepath.Join(dir, "u16.txt"), u16, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{KindWhatsApp, KindAuto} {
		st, err := memtree.Open(filepath.Join(t.TempDir(), "chunks.db"))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Run(context.Background(), st, []string{dir}, Options{Kind: kind})
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := 5 // files read as WhatsApp; "export" has no extension: read only when forced
		if kind == KindAuto {
			want = 4
		}
		if sum.Failures != 0 || sum.Files != want || sum.Sources != want {
			t.Errorf("kind %q: %d files, %d sources, failures %v, skipped %v", kind, sum.Files, sum.Sources, sum.Errors, sum.Skips)
		}
	}
}

func waWriteFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
