package ingest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

func utcMS(y, mo, d, h, mi, s int) int64 {
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC).UnixMilli()
}

// appWant is one message an app fixture must yield.
type appWant struct {
	author, text       string
	y, mo, d, h, mi, s int
}

// appCheck runs r on one fixture file and compares every message's author,
// time (local wall time unless utc) and text.
func appCheck(t *testing.T, r readkit.Reader, name, content string, utc bool, want []appWant) *readkit.Report {
	t.Helper()
	p := readertest.WriteFile(t, name, content)
	out, rep := readertest.Run(t, r, p)
	var got []string
	for _, s := range out.Sources {
		for _, m := range s.Messages {
			got = append(got, waFmtMsg(m.Author, m.Text, m.TimestampMS))
		}
	}
	var ws []string
	for _, w := range want {
		ms := readertest.LocalMS(w.y, w.mo, w.d, w.h, w.mi, w.s)
		if utc {
			ms = utcMS(w.y, w.mo, w.d, w.h, w.mi, w.s)
		}
		ws = append(ws, waFmtMsg(w.author, w.text, ms))
	}
	if strings.Join(got, "\n") != strings.Join(ws, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s\n(errors %v)", strings.Join(got, "\n"), strings.Join(ws, "\n"), rep.Sum.Errors)
	}
	if rep.Sum.Failures != 0 {
		t.Errorf("failures %v", rep.Sum.Errors)
	}
	return rep
}

// TestIRCLogs reads one log per client layout and pattern: irssi (a day from
// "Log opened", a "Day changed", mode prefixes, actions, events), WeeChat (tab
// columns, events in the nick column, actions), ZNC (the day from the file
// name), HexChat (the year from BEGIN LOGGING).
func TestIRCLogs(t *testing.T) {
	t.Run("irssi", func(t *testing.T) {
		rep := appCheck(t, chat.IRCReader{}, "#golang.log", "--- Log opened Mon Jan 05 10:00:00 2026\n"+
			"10:00 -!- micah [~m@host] has joined #golang\n10:01 <@micah> morning all\n10:02 < dana> hi micah\n"+
			"10:03  * micah waves\n--- Day changed Tue Jan 06 2026\n00:05 <+dana> past midnight\n--- Log closed Tue Jan 06 00:10:00 2026\n", false,
			[]appWant{{"micah", "morning all", 2026, 1, 5, 10, 1, 0}, {"dana", "hi micah", 2026, 1, 5, 10, 2, 0},
				{"micah", "* micah waves", 2026, 1, 5, 10, 3, 0}, {"dana", "past midnight", 2026, 1, 6, 0, 5, 0}})
		if !readertest.HasNote(rep, false, "1 join, part") {
			t.Errorf("events not counted: %v", rep.Sum.Notes)
		}
	})
	t.Run("weechat", func(t *testing.T) {
		appCheck(t, chat.IRCReader{}, "irc.libera.#go.weechatlog", "2026-01-05 10:00:00\t-->\tmicah (~m@host) has joined #go\n"+
			"2026-01-05 10:01:00\t@micah\tmorning: all\n2026-01-05 10:02:30\tdana\thi\n2026-01-05 10:03:00\t *\tmicah waves\n"+
			"2026-01-05 10:04:00\t--\tMode #go [+o dana] by micah\n", false,
			[]appWant{{"micah", "morning: all", 2026, 1, 5, 10, 1, 0}, {"dana", "hi", 2026, 1, 5, 10, 2, 30}, {"micah", "* micah waves", 2026, 1, 5, 10, 3, 0}})
	})
	t.Run("znc", func(t *testing.T) {
		appCheck(t, chat.IRCReader{}, "2026-01-05.log", "[10:00:00] *** Joins: micah (~m@host)\n[10:01:00] <micah> hello\n[10:01:30] * dana waves back\n[10:02:00] <dana> [link] see <this>\n", false,
			[]appWant{{"micah", "hello", 2026, 1, 5, 10, 1, 0}, {"dana", "* dana waves back", 2026, 1, 5, 10, 1, 30}, {"dana", "[link] see <this>", 2026, 1, 5, 10, 2, 0}})
	})
	t.Run("hexchat", func(t *testing.T) {
		appCheck(t, chat.IRCReader{}, "#chan.log", "**** BEGIN LOGGING AT Mon Jan  5 10:00:00 2026\n\nJan 05 10:00:00 *\tmicah has joined #chan\n"+
			"Jan 05 10:01:00 <micah>\thello there\nJan 05 10:02:00 *\tdana waves\nJan 05 10:03:00 <dana>\tbye\n", false,
			[]appWant{{"micah", "hello there", 2026, 1, 5, 10, 1, 0}, {"dana", "* dana waves", 2026, 1, 5, 10, 2, 0}, {"dana", "bye", 2026, 1, 5, 10, 3, 0}})
	})
	t.Run("prose is no log", func(t *testing.T) {
		p := readertest.WriteFile(t, "notes.txt", "10:00 meeting with the team\nagenda: budget\n")
		if (chat.IRCReader{}).Detect(p, false, []byte("10:00 meeting with the team\nagenda: budget\n")) {
			t.Error("prose detected as an IRC log")
		}
	})
}

// TestMatrixExport reads an Element JSON export: display names from member
// events, a reply without its quoted fallback, an edit applied, an emote, a
// file named, state events counted.
func TestMatrixExport(t *testing.T) {
	doc := `{"room_name":"Planning","room_creator":"Micah","topic":"","export_date":"05/01/2026","exported_by":"Micah","messages":[
{"type":"m.room.create","sender":"@micah:matrix.example","state_key":"","content":{"creator":"@micah:matrix.example"},"origin_server_ts":1767607200000,"event_id":"$c","room_id":"!room:matrix.example"},
{"type":"m.room.member","sender":"@micah:matrix.example","state_key":"@micah:matrix.example","content":{"membership":"join","displayname":"Micah Stubbs"},"origin_server_ts":1767607200001,"event_id":"$m1","room_id":"!room:matrix.example"},
{"type":"m.room.member","sender":"@dana:matrix.example","state_key":"@dana:matrix.example","content":{"membership":"join","displayname":"Dana"},"origin_server_ts":1767607200002,"event_id":"$m2","room_id":"!room:matrix.example"},
{"type":"m.room.message","sender":"@micah:matrix.example","content":{"msgtype":"m.text","body":"budget is due fridy"},"origin_server_ts":1767607260000,"event_id":"$1","room_id":"!room:matrix.example"},
{"type":"m.room.message","sender":"@micah:matrix.example","content":{"msgtype":"m.text","body":" * budget is due friday","m.new_content":{"msgtype":"m.text","body":"budget is due friday"},"m.relates_to":{"rel_type":"m.replace","event_id":"$1"}},"origin_server_ts":1767607270000,"event_id":"$2","room_id":"!room:matrix.example"},
{"type":"m.room.message","sender":"@dana:matrix.example","content":{"msgtype":"m.text","body":"> <@micah:matrix.example> budget is due friday\n\nok, on it","m.relates_to":{"m.in_reply_to":{"event_id":"$1"}}},"origin_server_ts":1767607320000,"event_id":"$3","room_id":"!room:matrix.example"},
{"type":"m.room.message","sender":"@dana:matrix.example","content":{"msgtype":"m.emote","body":"cheers"},"origin_server_ts":1767607380000,"event_id":"$4","room_id":"!room:matrix.example"},
{"type":"m.room.message","sender":"@ghost:matrix.example","content":{"msgtype":"m.file","body":"report.pdf","filename":"report.pdf","info":{"mimetype":"application/pdf","size":1234}},"origin_server_ts":1767607440000,"event_id":"$5","room_id":"!room:matrix.example"}]}`
	p := readertest.WriteFile(t, "matrix - Planning - Chat Export - 2026-01-05.json", doc)
	if !(chat.MatrixReader{}).Detect(p, false, []byte(doc)) || (chat.TelegramReader{}).Detect(p, false, []byte(doc)) {
		t.Fatal("detection")
	}
	rep := appCheck(t, chat.MatrixReader{}, "export.json", doc, true, []appWant{
		{"Micah Stubbs", "budget is due friday", 2026, 1, 5, 10, 1, 0}, {"Dana", "ok, on it", 2026, 1, 5, 10, 2, 0},
		{"Dana", "* cheers", 2026, 1, 5, 10, 3, 0}, {"@ghost:matrix.example", "[file report.pdf]", 2026, 1, 5, 10, 4, 0}})
	if !readertest.HasNote(rep, false, "3 membership, state") {
		t.Errorf("events: %v", rep.Sum.Notes)
	}
	out, _ := readertest.Run(t, chat.MatrixReader{}, readertest.WriteFile(t, "export.json", doc))
	m := out.Sources[0].Messages
	if m[1].ReplyTo != "matrix:$1" || m[0].AuthorAddr != "@micah:matrix.example" || len(m[3].Attachments) != 1 || m[3].Attachments[0].ContentType != "application/pdf" {
		t.Errorf("reply, address or attachment: %+v", m)
	}
}

// TestNoteAppExports reads Google Keep (text, checklist, labels, links,
// attachments, a note in the trash), Day One (escapes, photo links, place,
// attachments) and Roam (outline, headings, a daily note's date, a page only
// linked to) exports, each note a document with its own time.
func TestNoteAppExports(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"Keep/Groceries.json": `{"color":"DEFAULT","isTrashed":false,"isPinned":true,"isArchived":false,"title":"Groceries","userEditedTimestampUsec":1767610000000000,"createdTimestampUsec":1767607200000000,` +
			`"listContent":[{"text":"milk","isChecked":true},{"text":"bread","isChecked":false}],"labels":[{"name":"home"}],"attachments":[{"filePath":"1a2b.jpg","mimetype":"image/jpeg"}],"annotations":[{"description":"","source":"WEBLINK","title":"Recipe","url":"https://recipes.example/bread"}]}`,
		"Keep/Old.json":   `{"isTrashed":true,"title":"Old","textContent":"gone","userEditedTimestampUsec":1767607200000000,"createdTimestampUsec":1767607200000000}`,
		"Keep/Plain.json": `{"isTrashed":false,"title":"","textContent":"call the plumber","userEditedTimestampUsec":1767700000000000}`,
		"Journal.json": `{"metadata":{"version":"1.0"},"entries":[{"uuid":"E1","creationDate":"2026-01-05T08:30:00Z","timeZone":"Europe/Berlin","tags":["travel"],` +
			`"text":"# Lisbon day one\n\nTram 28 was full\\. We walked\\!\n![](dayone-moment://P1)","location":{"placeName":"Alfama","localityName":"Lisbon","country":"Portugal"},` +
			`"photos":[{"md5":"abc123","type":"jpeg","identifier":"P1"}]}]}`,
		"roam.json": `[{"title":"January 5th, 2026","children":[{"string":"Met [[Micah]] about the budget","uid":"a1","children":[{"string":"due friday","uid":"a2"}]}]},` +
			`{"title":"Project Atlas","create-time":1767700000000,"children":[{"string":"Goals","heading":2,"uid":"b1","edit-email":"micah@home.example","children":[{"string":"ship v1","uid":"b2"}]}]},` +
			`{"title":"Micah","children":[]}]`,
	})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 || sum.SkippedBy[notes.ReasonKeepTrash] != 1 {
		t.Fatalf("errors %v, skipped %v", sum.Errors, sum.SkippedBy)
	}
	byTitle := map[string]memtree.SourceInput{}
	for _, s := range c.srcs {
		byTitle[s.Title] = s
	}
	check := func(title, provider string, ms int64, has ...string) {
		t.Helper()
		s, ok := byTitle[title]
		if !ok {
			t.Errorf("%q missing; have %v", title, byTitle)
			return
		}
		m := s.Messages[0]
		if s.Provider != provider || m.TimestampMS != ms {
			t.Errorf("%q: provider %s, time %d, want %s %d", title, s.Provider, m.TimestampMS, provider, ms)
		}
		for _, h := range has {
			if !strings.Contains(m.Text, h) {
				t.Errorf("%q misses %q: %q", title, h, m.Text)
			}
		}
	}
	check("Groceries", "keep", 1767607200000, "[x] milk", "[ ] bread", "Recipe https://recipes.example/bread", "[attachment 1a2b.jpg]")
	check("Plain", "keep", 1767700000000, "call the plumber")
	check("Lisbon day one", "dayone", utcMS(2026, 1, 5, 8, 30, 0), "Tram 28 was full. We walked!", "Place: Alfama, Lisbon, Portugal", "[attachment abc123.jpeg]")
	check("January 5th, 2026", "roam", utcMS(2026, 1, 5, 0, 0, 0), "- Met [[Micah]] about the budget\n  - due friday")
	check("Project Atlas", "roam", 1767700000000, "## Goals\n  - ship v1")
	if s := byTitle["Groceries"]; strings.Join(s.Tags, ",") != "home" || len(s.Messages[0].Attachments) != 1 {
		t.Errorf("keep tags/attachments: %+v", s)
	}
	if s := byTitle["Lisbon day one"]; strings.Contains(s.Messages[0].Text, "dayone-moment") || strings.Join(s.Tags, ",") != "travel" {
		t.Errorf("day one: %+v", s)
	}
	if s := byTitle["Project Atlas"]; s.Messages[0].Author != "micah@home.example" {
		t.Errorf("roam author: %q", s.Messages[0].Author)
	}
	if _, ok := byTitle["Micah"]; ok || len(c.srcs) != 5 {
		t.Errorf("%d documents (an empty Roam page is none): %v", len(c.srcs), byTitle)
	}
}

// TestMattermostBulkExport reads a bulk export: users named and addressed by
// their email, a channel post with a threaded reply and an attachment, a
// direct message, other lines counted.
func TestMattermostBulkExport(t *testing.T) {
	doc := `{"type":"version","version":1,"info":{"generator":"mattermost-server","version":"9.0.0"}}
{"type":"team","team":{"name":"acme","display_name":"Acme","type":"O"}}
{"type":"channel","channel":{"team":"acme","name":"town-square","display_name":"Town Square","type":"O"}}
{"type":"user","user":{"username":"micah","email":"micah@work.example","first_name":"Micah","last_name":"Stubbs","nickname":"Mick"}}
{"type":"user","user":{"username":"dana","email":"dana@work.example","first_name":"","last_name":"","nickname":"Dana R"}}
{"type":"post","post":{"team":"acme","channel":"town-square","user":"micah","message":"release on friday","create_at":1767607200000,"attachments":[{"path":"data/plan.pdf"}],"replies":[{"user":"dana","message":"ok, tests are green","create_at":1767607260000}]}}
{"type":"direct_channel","direct_channel":{"members":["dana","micah"]}}
{"type":"direct_post","direct_post":{"channel_members":["micah","dana"],"user":"dana","message":"lunch?","create_at":1767610800000}}
`
	p := readertest.WriteFile(t, "export.jsonl", doc)
	out, rep := readertest.Run(t, chat.MattermostReader{}, p)
	if rep.Sum.Failures != 0 {
		t.Fatalf("errors %v", rep.Sum.Errors)
	}
	var got []string
	titles := map[string]bool{}
	for _, s := range out.Sources {
		titles[s.SourceID+" "+s.Title] = true
		for _, m := range s.Messages {
			got = append(got, m.Author+" <"+m.AuthorAddr+"> "+waFmtMsg("", m.Text, m.TimestampMS)+" reply="+m.ReplyTo)
		}
	}
	want := []string{
		"Micah Stubbs <micah@work.example>  @1767607200000: release on friday\n[attachment plan.pdf] reply=",
		"Dana R <dana@work.example>  @1767607260000: ok, tests are green reply=mattermost:acme/town-square:1767607200000:micah:0",
		"Dana R <dana@work.example>  @1767610800000: lunch? reply=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !titles["mattermost:acme/town-square/2026-01 Town Square (2026-01)"] || !titles["mattermost:dm/dana,micah/2026-01 Micah Stubbs, Dana R (2026-01)"] {
		t.Errorf("sources: %v", titles)
	}
	if !readertest.HasNote(rep, false, "3 version, team") {
		t.Errorf("other lines: %v", rep.Sum.Notes)
	}
}

// TestDiscordChatExporterCSV reads the CSV export in each date format the
// exporter writes: the old default, a culture's short date (day first told by
// the file's dates), a long date with the weekday, ISO 8601 and unix numbers.
func TestDiscordChatExporterCSV(t *testing.T) {
	head := "AuthorID,Author,Date,Content,Attachments,Reactions\n"
	for _, c := range []struct {
		name, rows string
		utc        bool
		want       []appWant
	}{
		{name: "old default", rows: `"111","micah#1234","05-Jan-26 10:00 AM","hello, all","",""` + "\n" + `"222","dana","05-Jan-26 01:30 PM","hi ""you""","","👍 (1)"` + "\n",
			want: []appWant{{"micah", "hello, all", 2026, 1, 5, 10, 0, 0}, {"dana", `hi "you"`, 2026, 1, 5, 13, 30, 0}}},
		{name: "german short date", rows: `"111","micah","05.01.2026 10:00","eins","",""` + "\n" + `"222","dana","13.01.2026 09:05","zwei","",""` + "\n",
			want: []appWant{{"micah", "eins", 2026, 1, 5, 10, 0, 0}, {"dana", "zwei", 2026, 1, 13, 9, 5, 0}}},
		{name: "long date with weekday", rows: `"111","micah","Monday, January 5, 2026 10:00 AM","long","",""` + "\n",
			want: []appWant{{"micah", "long", 2026, 1, 5, 10, 0, 0}}},
		{name: "iso and unix", utc: true, rows: `"111","micah","2026-01-05T10:00:00+00:00","iso","",""` + "\n" + `"222","dana","1767607260","unix","https://cdn.example/attachments/1/2/photo.png?ex=1",""` + "\n",
			want: []appWant{{"micah", "iso", 2026, 1, 5, 10, 0, 0}, {"dana", "unix", 2026, 1, 5, 10, 1, 0}}},
		{name: "multi-line content and attachment only", rows: "\"111\",\"micah\",\"1/5/2026 10:00 AM\",\"line one\nline two\",\"\",\"\"\n\"222\",\"dana\",\"1/5/2026 10:01 AM\",\"\",\"files/report.pdf\",\"\"\n",
			want: []appWant{{"micah", "line one\nline two", 2026, 1, 5, 10, 0, 0}, {"dana", "[attachment report.pdf]", 2026, 1, 5, 10, 1, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "Acme - general [123456789012].csv"
			if !(chat.DiscordReader{}).Detect(name, false, []byte(head+c.rows)) {
				t.Fatal("not detected")
			}
			appCheck(t, chat.DiscordReader{}, name, head+c.rows, c.utc, c.want)
		})
	}
}

// TestTelegramHTMLExport reads a page of Telegram Desktop's HTML export:
// authors (a joined message continues the one before), zoned and zoneless
// dates, a reply, a photo and a file named, a forward, service lines counted.
func TestTelegramHTMLExport(t *testing.T) {
	page := `<!DOCTYPE html>
<html>
 <head><meta charset="utf-8"/><title>Exported Data</title></head>
 <body onload="CheckLocation();">
  <div class="page_wrap">
   <div class="page_header"><div class="content"><div class="text bold">
Micah Stubbs
   </div></div></div>
   <div class="page_body chat_page">
    <div class="history">
     <div class="message service" id="message-1"><div class="body details">
January 5, 2026
     </div></div>
     <div class="message default clearfix" id="message120">
      <div class="pull_left userpic_wrap"><div class="userpic userpic2"><div class="initials">MS</div></div></div>
      <div class="body">
       <div class="pull_right date details" title="05.01.2026 10:00:00 UTC+01:00">
10:00
       </div>
       <div class="from_name">
Micah Stubbs 
       </div>
       <div class="text">
Hello <strong>there</strong>,<br>second line
       </div>
      </div>
     </div>
     <div class="message default clearfix joined" id="message121">
      <div class="body">
       <div class="pull_right date details" title="05.01.2026 10:01:00 UTC+01:00">
10:01
       </div>
       <div class="media_wrap clearfix">
        <a class="photo_wrap clearfix pull_left" href="photos/photo_1@05-01-2026_10-01-00.jpg"><img class="photo" src="photos/photo_1@05-01-2026_10-01-00_thumb.jpg"/></a>
       </div>
      </div>
     </div>
     <div class="message default clearfix" id="message122">
      <div class="pull_left userpic_wrap"><div class="userpic userpic5"><div class="initials">D</div></div></div>
      <div class="body">
       <div class="pull_right date details" title="05.01.2026 10:02:00 UTC+01:00">
10:02
       </div>
       <div class="from_name">
Dana
       </div>
       <div class="reply_to details">
In reply to <a href="#go_to_message120" onclick="return GoToMessage(120)">this message</a>
       </div>
       <div class="media_wrap clearfix">
        <div class="media clearfix pull_left media_file"><a class="media clearfix pull_left block_link media_file" href="files/report.pdf"><div class="body"><div class="title bold">report.pdf</div></div></a></div>
       </div>
       <div class="text">
see the report
       </div>
      </div>
     </div>
     <div class="message default clearfix" id="message123">
      <div class="body">
       <div class="pull_right date details" title="05.01.2026 10:03:00 UTC+01:00">
10:03
       </div>
       <div class="from_name">
Dana
       </div>
       <div class="forwarded body">
        <div class="from_name">
Lee <span class="date details">04.01.2026 09:00:00</span>
        </div>
        <div class="text">
old news
        </div>
       </div>
      </div>
     </div>
    </div>
   </div>
  </div>
 </body>
</html>`
	p := readertest.WriteFile(t, "messages.html", page)
	if !(chat.TelegramReader{}).Detect(p, false, []byte(page)) {
		t.Fatal("not detected")
	}
	rep := appCheck(t, chat.TelegramReader{}, "messages.html", page, true, []appWant{
		{"Micah Stubbs", "Hello there,\nsecond line", 2026, 1, 5, 9, 0, 0},
		{"Micah Stubbs", "[photo photo_1@05-01-2026_10-01-00.jpg]", 2026, 1, 5, 9, 1, 0},
		{"Dana", "see the report", 2026, 1, 5, 9, 2, 0},
		{"Dana", "(forwarded from Lee) old news", 2026, 1, 5, 9, 3, 0},
	})
	if !readertest.HasNote(rep, false, "1 service line") {
		t.Errorf("service lines: %v", rep.Sum.Notes)
	}
	out, _ := readertest.Run(t, chat.TelegramReader{}, readertest.WriteFile(t, "messages.html", page))
	m := out.Sources[0].Messages
	if m[2].ReplyTo != "telegram:Micah Stubbs:120" || len(m[2].Attachments) != 1 || m[2].Attachments[0].Name != "report.pdf" || out.Sources[0].Title != "Micah Stubbs (2026-01)" {
		t.Errorf("reply, attachment or title: %+v %q", m[2], out.Sources[0].Title)
	}
}

// TestIMessageExporterText reads imessage-exporter's text output: padded hours,
// read receipts, "Me", attachment paths, reactions dropped, an indented thread
// reply kept as a reply, a multi-line message with a blank line inside.
func TestIMessageExporterText(t *testing.T) {
	doc := "Jan 05, 2026  9:00:00 AM\nMicah Stubbs\nAre we still on for lunch?\nReactions:\nLoved by Me\n" +
		"    Jan 05, 2026  9:05:00 AM\n    Me\n    Yes, noon\n\nThis message responded to an earlier message.\n\n" +
		"Jan 05, 2026 12:30:10 PM (Read by them after 2 minutes)\nMe\n/Users/me/Library/Messages/Attachments/ab/12/IMG_1234.HEIC\nfirst line\n\nafter a blank line\n\n" +
		"Jan 06, 2026 10:00:00 PM\n+15551234567\nnew number, who dis\n\n"
	p := readertest.WriteFile(t, "Micah Stubbs.txt", doc)
	if !(chat.IMessageReader{}).Detect(p, false, []byte(doc)) || (chat.WhatsAppReader{}).Detect(p, false, []byte(doc)) {
		t.Fatal("detection")
	}
	appCheck(t, chat.IMessageReader{}, "Micah Stubbs.txt", doc, false, []appWant{
		{"Micah Stubbs", "Are we still on for lunch?", 2026, 1, 5, 9, 0, 0},
		{"Me", "Yes, noon", 2026, 1, 5, 9, 5, 0},
		{"Me", "[attachment IMG_1234.HEIC]\nfirst line\n\nafter a blank line", 2026, 1, 5, 12, 30, 10},
		{"+15551234567", "new number, who dis", 2026, 1, 6, 22, 0, 0},
	})
	out, _ := readertest.Run(t, chat.IMessageReader{}, readertest.WriteFile(t, "Micah Stubbs.txt", doc))
	m := out.Sources[0].Messages
	if m[1].ReplyTo != m[0].Ref || len(m[2].Attachments) != 1 || m[3].AuthorAddr != "+15551234567" {
		t.Errorf("reply, attachment or address: %+v", m)
	}
}

// TestLINEChatHistory reads LINE's saved chat history in English and Japanese
// layouts: day lines of each form, 24-hour and AM/PM times, a quoted
// multi-line message, a line without a sender counted.
func TestLINEChatHistory(t *testing.T) {
	t.Run("english", func(t *testing.T) {
		doc := "\ufeff[LINE] Chat history with Micah\r\nSaved on: 2026/01/06 10:00\r\n\r\n2026/01/05(Mon)\r\n10:00\tMicah\tHello\r\n" +
			"10:01\tMe\t\"two\r\nlines\"\r\n10:02\tMicah left the group.\r\n\r\n2026/01/06(Tue)\r\n09:30\tMe\t[Photo]\r\n"
		rep := appCheck(t, chat.LineReader{}, "[LINE] Chat with Micah.txt", doc, false, []appWant{
			{"Micah", "Hello", 2026, 1, 5, 10, 0, 0}, {"Me", "two\nlines", 2026, 1, 5, 10, 1, 0}, {"Me", "[Photo]", 2026, 1, 6, 9, 30, 0}})
		if !readertest.HasNote(rep, false, "1 line(s) without a sender") {
			t.Errorf("events: %v", rep.Sum.Notes)
		}
	})
	t.Run("newer english with weekday first and AM/PM", func(t *testing.T) {
		doc := "[LINE] Chat history with Micah\nSaved on: 1/6/2026, 10:00\n\nMon, 01/05/2026\n10:00 AM\tMicah\tmorning\n02:30 PM\tMe\tafternoon\n"
		appCheck(t, chat.LineReader{}, "chat.txt", doc, false, []appWant{{"Micah", "morning", 2026, 1, 5, 10, 0, 0}, {"Me", "afternoon", 2026, 1, 5, 14, 30, 0}})
	})
	t.Run("japanese", func(t *testing.T) {
		doc := "[LINE] 太郎とのトーク履歴\n保存日時：2026/01/06 10:00\n\n2026/01/05(月)\n午前10:00\t太郎\tおはよう\n午後2:56\t花子\tこんにちは\n"
		appCheck(t, chat.LineReader{}, "chat.txt", doc, false, []appWant{{"太郎", "おはよう", 2026, 1, 5, 10, 0, 0}, {"花子", "こんにちは", 2026, 1, 5, 14, 56, 0}})
	})
}

// TestSignalExport reads signal-export's chat.md (seconds or not, multi-line
// text, a quote dropped, reactions dropped, attachments named, a deleted
// message left out) and its data.json lines.
func TestSignalExport(t *testing.T) {
	md := "[2026-01-05 10:00:00] Micah: are you coming?  \n[2026-01-05 10:01:00] Me: \n\n> are you coming?\n\nyes, at noon  \nsee you\n(- Micah: 👍 -)\n" +
		"[2026-01-05 10:02] Micah: ![IMG_1.jpg](./media/IMG_1.jpg)    \n[2026-01-05 10:03:00] Micah: (This message was deleted)\n"
	dir := t.TempDir()
	p := filepath.Join(dir, "Micah Stubbs", "chat.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	waWriteFile(t, p, md)
	if !(chat.SignalReader{}).Detect(p, false, []byte(md)) {
		t.Fatal("chat.md not detected")
	}
	out, rep := readertest.Run(t, chat.SignalReader{}, p)
	var got []string
	for _, s := range out.Sources {
		for _, m := range s.Messages {
			got = append(got, waFmtMsg(m.Author, m.Text, m.TimestampMS))
		}
	}
	want := []string{waFmtMsg("Micah", "are you coming?", readertest.LocalMS(2026, 1, 5, 10, 0, 0)), waFmtMsg("Me", "yes, at noon\nsee you", readertest.LocalMS(2026, 1, 5, 10, 1, 0)),
		waFmtMsg("Micah", "[attachment IMG_1.jpg]", readertest.LocalMS(2026, 1, 5, 10, 2, 0))}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || rep.Sum.Failures != 0 {
		t.Errorf("chat.md:\n%s\nwant:\n%s\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"), rep.Sum.Errors)
	}
	if out.Sources[0].SourceID != "signal:Micah Stubbs/2026-01" {
		t.Errorf("conversation: %s", out.Sources[0].SourceID)
	}
	js := `{"date": "2026-01-05T10:00:00", "sender": "Micah", "body": "hello  ", "quote": "", "sticker": "", "reactions": [], "attachments": [], "deleted": false}` + "\n" +
		`{"date": "2026-01-05T10:05:00", "sender": "Me", "body": "  ", "quote": "", "sticker": "", "reactions": [], "attachments": [{"name": "doc.pdf", "path": "media/doc.pdf"}], "deleted": false}` + "\n"
	jp := filepath.Join(dir, "Micah Stubbs", "data.json")
	waWriteFile(t, jp, js)
	if !(chat.SignalReader{}).Detect(jp, false, []byte(js)) {
		t.Fatal("data.json not detected")
	}
	appCheck(t, chat.SignalReader{}, "data.json", js, false, []appWant{{"Micah", "hello", 2026, 1, 5, 10, 0, 0}, {"Me", "[attachment doc.pdf]", 2026, 1, 5, 10, 5, 0}})
}

// TestHangoutsTakeout reads Hangouts.json in both Takeout layouts: names from
// participant data, segments with line breaks and links, a photo named, a call
// event counted; times in microseconds (UTC).
func TestHangoutsTakeout(t *testing.T) {
	current := `{"conversations":[{"conversation":{"conversation_id":{"id":"Ugx1"},"conversation":{"id":{"id":"Ugx1"},"type":"STICKY_ONE_TO_ONE",` +
		`"participant_data":[{"id":{"gaia_id":"101","chat_id":"101"},"fallback_name":"Micah Stubbs"},{"id":{"gaia_id":"202","chat_id":"202"},"fallback_name":"Dana"}]}},` +
		`"events":[{"conversation_id":{"id":"Ugx1"},"sender_id":{"gaia_id":"101","chat_id":"101"},"timestamp":"1767607200000000","event_id":"e1","event_type":"REGULAR_CHAT_MESSAGE",` +
		`"chat_message":{"message_content":{"segment":[{"type":"TEXT","text":"see "},{"type":"LINK","text":"https://x.example/a"},{"type":"LINE_BREAK","text":"\n"},{"type":"TEXT","text":"tonight"}]}}},` +
		`{"conversation_id":{"id":"Ugx1"},"sender_id":{"gaia_id":"202","chat_id":"202"},"timestamp":"1767607260000000","event_id":"e2","event_type":"HANGOUT_EVENT","hangout_event":{"event_type":"START_HANGOUT"}},` +
		`{"conversation_id":{"id":"Ugx1"},"sender_id":{"gaia_id":"202","chat_id":"202"},"timestamp":"1767607320000000","event_id":"e3","event_type":"REGULAR_CHAT_MESSAGE",` +
		`"chat_message":{"message_content":{"attachment":[{"embed_item":{"type":["PLUS_PHOTO"],"plus_photo":{"url":"https://lh3.example/photos/IMG_9.jpg"}}}]}}}]}]}`
	p := readertest.WriteFile(t, "Hangouts.json", current)
	if !(chat.HangoutsReader{}).Detect(p, false, []byte(current)) {
		t.Fatal("not detected")
	}
	rep := appCheck(t, chat.HangoutsReader{}, "Hangouts.json", current, true, []appWant{
		{"Micah Stubbs", "see https://x.example/a\ntonight", 2026, 1, 5, 10, 0, 0}, {"Dana", "[photo]", 2026, 1, 5, 10, 2, 0}})
	if !readertest.HasNote(rep, false, "1 call, membership") {
		t.Errorf("events: %v", rep.Sum.Notes)
	}
	older := `{"continuation_end_timestamp":"1","conversation_state":[{"conversation_id":{"id":"Ugx2"},"conversation_state":{"conversation":{"id":{"id":"Ugx2"},"name":"Book club",` +
		`"participant_data":[{"id":{"gaia_id":"101","chat_id":"101"},"fallback_name":"Micah Stubbs"}]},"event":[{"sender_id":{"gaia_id":"101","chat_id":"101"},"timestamp":"1420070400000000","event_id":"o1",` +
		`"chat_message":{"message_content":{"segment":[{"type":"TEXT","text":"happy new year"}]}}}]}}]}`
	appCheck(t, chat.HangoutsReader{}, "Hangouts.json", older, true, []appWant{{"Micah Stubbs", "happy new year", 2015, 1, 1, 0, 0, 0}})
}

// TestZulipExport reads an organization export: messages-000001.json with the
// realm.json beside it (users with emails, a stream whose topics are threads, a
// direct message), older pub_date, realm.json named as read with them.
func TestZulipExport(t *testing.T) {
	dir := readertest.WriteFiles(t, map[string]string{
		"zulip-export/realm.json": `{"zerver_realm":[{"id":1,"name":"Acme"}],"zerver_userprofile":[{"id":10,"full_name":"Micah Stubbs","email":"user10@zulip.example","delivery_email":"micah@work.example"},` +
			`{"id":11,"full_name":"Dana","email":"dana@work.example","delivery_email":"dana@work.example"}],"zerver_stream":[{"id":5,"name":"design"}],` +
			`"zerver_recipient":[{"id":100,"type":2,"type_id":5},{"id":101,"type":1,"type_id":10},{"id":102,"type":1,"type_id":11}],"zerver_subscription":[{"user_profile":11,"recipient":102},{"user_profile":10,"recipient":101}]}`,
		"zulip-export/messages-000001.json": `{"zerver_message":[{"id":1,"sender":10,"recipient":100,"subject":"logo","content":"new logo draft","date_sent":1767607200.5},` +
			`{"id":2,"sender":11,"recipient":100,"subject":"logo","content":"looks good","date_sent":1767607260},` +
			`{"id":3,"sender":11,"recipient":101,"subject":"","content":"lunch?","pub_date":1767610800}],"zerver_usermessage":[]}`,
	})
	c, sum := runOn(t, Options{}, dir)
	if sum.Failures != 0 || sum.SkippedBy[chat.ReasonZulipRealm] != 1 {
		t.Fatalf("errors %v, skipped %v", sum.Errors, sum.SkippedBy)
	}
	var got []string
	for _, s := range c.srcs {
		for _, m := range s.Messages {
			got = append(got, s.SourceID+" | "+m.Author+" <"+m.AuthorAddr+"> "+waFmtMsg("", m.Text, m.TimestampMS)+" reply="+m.ReplyTo)
		}
	}
	sort.Strings(got)
	want := []string{
		"zulip:dm/10,11/2026-01 | Dana <dana@work.example>  @1767610800000: lunch? reply=",
		"zulip:stream/design/2026-01 | Dana <dana@work.example>  @1767607260000: looks good reply=zulip:1",
		"zulip:stream/design/2026-01 | Micah Stubbs <micah@work.example>  @1767607200500: [logo] new logo draft reply=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDiscordChatExporterHTML reads the HTML export of both template
// generations: a group's author and header time, a grouped message's short
// timestamp title, a reply, an attachment, "(edited)" dropped.
func TestDiscordChatExporterHTML(t *testing.T) {
	current := `<!DOCTYPE html><html><head><title>Acme - general</title></head><body>
<div class="preamble"><div class="preamble__guild-icon-container"></div><div class="preamble__entries-container"><div class="preamble__entry">Acme</div><div class="preamble__entry">Text Channels / general</div></div></div>
<div class="chatlog">
<div class="chatlog__message-group">
 <div id="chatlog__message-container-1001" class="chatlog__message-container" data-message-id="1001"><div class="chatlog__message">
  <div class="chatlog__message-aside"><img class="chatlog__avatar" src="a.png"></div>
  <div class="chatlog__message-primary">
   <div class="chatlog__header"><span class="chatlog__author" title="micah#1234" data-user-id="11">Micah</span> <span class="chatlog__timestamp"><a href="#chatlog__message-container-1001">1/5/2026 10:00 AM</a></span></div>
   <div class="chatlog__content chatlog__markdown"><span class="chatlog__markdown-preserve">release <strong>friday</strong></span> <span class="chatlog__edited-timestamp" title="x">(edited)</span></div>
  </div></div></div>
 <div id="chatlog__message-container-1002" class="chatlog__message-container" data-message-id="1002"><div class="chatlog__message">
  <div class="chatlog__message-aside"><div class="chatlog__short-timestamp" title="1/5/2026 10:02 AM">10:02 AM</div></div>
  <div class="chatlog__message-primary">
   <div class="chatlog__attachment"><div class="chatlog__attachment-generic"><div class="chatlog__attachment-generic-name"><a href="https://cdn.example/attachments/1/2/plan.pdf?ex=1">plan.pdf</a></div></div></div>
  </div></div></div>
</div>
<div class="chatlog__message-group">
 <div id="chatlog__message-container-1003" class="chatlog__message-container" data-message-id="1003"><div class="chatlog__message">
  <div class="chatlog__message-primary">
   <div class="chatlog__reference"><div class="chatlog__reference-content"><span class="chatlog__reference-link" onclick="scrollToMessage(event, '1001')">release friday</span></div></div>
   <div class="chatlog__header"><span class="chatlog__author" title="dana" data-user-id="12">Dana</span> <span class="chatlog__timestamp"><a href="#x">1/5/2026 1:15 PM</a></span></div>
   <div class="chatlog__content chatlog__markdown"><span class="chatlog__markdown-preserve">ok</span></div>
  </div></div></div>
</div>
</div></body></html>`
	name := "Acme - general [123456789012].html"
	if !(chat.DiscordReader{}).Detect(name, false, []byte(current)) || (chat.TelegramReader{}).Detect(name, false, []byte(current)) {
		t.Fatal("detection")
	}
	appCheck(t, chat.DiscordReader{}, name, current, false, []appWant{
		{"Micah", "release friday", 2026, 1, 5, 10, 0, 0}, {"Micah", "[attachment plan.pdf]", 2026, 1, 5, 10, 2, 0}, {"Dana", "ok", 2026, 1, 5, 13, 15, 0}})
	out, _ := readertest.Run(t, chat.DiscordReader{}, readertest.WriteFile(t, name, current))
	if m := out.Sources[0].Messages; m[2].ReplyTo != "discord:123456789012:1001" || m[0].AuthorAddr != "micah#1234" || out.Sources[0].Title != "Acme Text Channels / general (2026-01)" {
		t.Errorf("reply, address or title: %+v %q", m, out.Sources[0].Title)
	}
	older := `<html><body><div class="preamble"><div class="preamble__entry">Acme</div><div class="preamble__entry">general</div></div><div class="chatlog">
<div class="chatlog__message-group"><div class="chatlog__author-avatar-container"></div><div class="chatlog__messages">
<span class="chatlog__author-name" title="micah#1234" data-user-id="11">Micah</span> <span class="chatlog__timestamp">05-Jan-26 10:00 AM</span>
<div class="chatlog__message " data-message-id="900" id="message-900"><div class="chatlog__content"><div class="markdown"><span class="preserve-whitespace">old style</span></div></div></div>
<div class="chatlog__message " data-message-id="901" id="message-901"><div class="chatlog__content"><div class="markdown"><span class="preserve-whitespace">second</span></div></div></div>
</div></div></div></body></html>`
	appCheck(t, chat.DiscordReader{}, "Acme - general [123456789012].html", older, false, []appWant{
		{"Micah", "old style", 2026, 1, 5, 10, 0, 0}, {"Micah", "second", 2026, 1, 5, 10, 0, 0}})
}

// TestTeamsSkypeExport reads the messages.json of Teams (free) and Skype's
// personal data export: plain and rich text, a file named from its URI object,
// a call event counted, names from the messages.
func TestTeamsSkypeExport(t *testing.T) {
	doc := `{"userId":"8:live:me","exportDate":"2026-01-06T10:00","conversations":[{"id":"19:abc@thread.skype","displayName":"Project Atlas","MessageList":[` +
		`{"id":"1","displayName":"Micah Stubbs","originalarrivaltime":"2026-01-05T10:00:00.000Z","messagetype":"RichText","content":"ship it <b>friday</b>&amp;test","conversationid":"19:abc@thread.skype","from":"8:live:micah"},` +
		`{"id":"2","displayName":null,"originalarrivaltime":"2026-01-05T10:01:00Z","messagetype":"Text","content":"ok &lt;3","conversationid":"19:abc@thread.skype","from":"8:live:micah"},` +
		`{"id":"3","displayName":"Dana","originalarrivaltime":"2026-01-05T10:02:00Z","messagetype":"Event/Call","content":"<partlist type=\"started\"></partlist>","from":"8:live:dana"},` +
		`{"id":"4","displayName":"Dana","originalarrivaltime":"2026-01-05T10:03:00Z","messagetype":"RichText/Media_GenericFile","content":"<URIObject type=\"File.1\"><OriginalName v=\"plan.pdf\"/></URIObject>","from":"8:live:dana"}]}]}`
	p := readertest.WriteFile(t, "messages.json", doc)
	if !(chat.TeamsReader{}).Detect(p, false, []byte(doc)) || (chat.HangoutsReader{}).Detect(p, false, []byte(doc)) {
		t.Fatal("detection")
	}
	rep := appCheck(t, chat.TeamsReader{}, "messages.json", doc, true, []appWant{
		{"Micah Stubbs", "ship it friday&test", 2026, 1, 5, 10, 0, 0}, {"Micah Stubbs", "ok <3", 2026, 1, 5, 10, 1, 0}, {"Dana", "[attachment plan.pdf]", 2026, 1, 5, 10, 3, 0}})
	if !readertest.HasNote(rep, false, "1 call, membership") {
		t.Errorf("events: %v", rep.Sum.Notes)
	}
}

// TestNotionDatabaseCSV reads a Notion database table as its pages when the
// export holds no page files, and names it as skipped when the pages are beside
// it; a CSV without Notion's id is no Notion table.
func TestNotionDatabaseCSV(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	dir := readertest.WriteFiles(t, map[string]string{
		"Tasks " + id + ".csv":                        "\ufeffName,Status,Tags,Created\nShip v1,Done,\"work, atlas\",\"January 5, 2026 10:00 AM\"\nPlan offsite,,,\n",
		"Reading " + id + "_all.csv":                  "Name,Author\nDune,Herbert\n",
		"Reading " + id + ".csv":                      "Name,Author\nDune,Herbert\n",
		"Reading " + id + "/Dune " + id[:31] + "f.md": "# Dune\n\nAuthor: Herbert\n",
		"plain.csv": "a,b\n1,2\n",
	})
	c, sum := runOn(t, Options{}, dir)
	byTitle := map[string]memtree.SourceInput{}
	for _, s := range c.srcs {
		byTitle[s.Title] = s
	}
	s, ok := byTitle["Ship v1"]
	if !ok || s.Provider != "notion" || strings.Join(s.Tags, ",") != "work,atlas" || s.Messages[0].TimestampMS != readertest.LocalMS(2026, 1, 5, 10, 0, 0) ||
		!strings.Contains(s.Messages[0].Text, "Status: Done") {
		t.Errorf("Ship v1: %+v", s)
	}
	if _, ok := byTitle["Plan offsite"]; !ok {
		t.Errorf("a row with only a title is a page: %v", byTitle)
	}
	if sum.SkippedBy[notes.ReasonNotionTable] != 2 || sum.SkippedBy[readkit.ReasonUnknownText] != 1 {
		t.Errorf("skipped %v", sum.SkippedBy)
	}
	if _, ok := byTitle["Dune"]; !ok || sum.Failures != 0 {
		t.Errorf("the page beside its table is read once: %v %v", byTitle, sum.Errors)
	}
}
