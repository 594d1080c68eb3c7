package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// slackMsgs returns the messages of every source of one conversation, in order.
func slackMsgs(t *testing.T, out *readertest.Output, conv string) []memtree.MessageInput {
	t.Helper()
	var msgs []memtree.MessageInput
	for _, s := range out.Sources {
		if strings.HasPrefix(s.SourceID, "slack:"+conv+"/") {
			msgs = append(msgs, s.Messages...)
		}
	}
	return msgs
}

func msgByRef(msgs []memtree.MessageInput, ref string) *memtree.MessageInput {
	for i := range msgs {
		if msgs[i].Ref == ref {
			return &msgs[i]
		}
	}
	return nil
}

func TestSlackPlainMessagesAndMonths(t *testing.T) {
	dir := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-05.json": `[
			{"type":"message","subtype":"channel_join","user":"U2","text":"<@U2> has joined the channel","ts":"1767600000.000100"},
			{"type":"message","user":"U1","text":"<@U2> pricing &amp; tiers are in <https://docs.example/p|the doc> &lt;3","ts":"1767600100.000200",
			 "edited":{"user":"U1","ts":"1767600150.000000"}}]`,
		"phoenix/2026-02-02.json": `[{"type":"message","user":"U2","text":"February plans","ts":1770000000.5}]`,
	})
	out, rep := readertest.Run(t, SlackReader{}, dir)
	if rep.Sum.Failures != 0 || rep.Sum.Files != 4 {
		t.Fatalf("failures %v, files %d (want 4: users, channels, 2 day files)", rep.Sum.Errors, rep.Sum.Files)
	}
	if len(out.Sources) != 2 {
		t.Fatalf("sources = %d, want one per month", len(out.Sources))
	}
	jan, feb := out.Sources[0], out.Sources[1]
	if jan.SourceID != "slack:#phoenix/2026-01" || jan.Title != "#phoenix (2026-01)" || !jan.Merge || jan.Kind != memtree.KindChat || jan.Provider != "slack" {
		t.Errorf("January source = %+v", jan)
	}
	if feb.SourceID != "slack:#phoenix/2026-02" || len(feb.Messages) != 1 || feb.Messages[0].Ref != "slack:phoenix:1770000000.5" || feb.Messages[0].TimestampMS != 1770000000500 {
		t.Errorf("February source = %+v", feb)
	}
	if len(jan.Messages) != 1 {
		t.Fatalf("January messages = %+v, want the join skipped", jan.Messages)
	}
	m := jan.Messages[0]
	if m.Ref != "slack:phoenix:1767600100.000200" || m.Author != "Ana Souza" || m.AuthorAddr != "ana.souza" || m.TimestampMS != 1767600100000 ||
		m.Text != "Sam Rivera pricing & tiers are in the doc (https://docs.example/p) <3" {
		t.Errorf("message = %+v", m)
	}
}

func TestSlackBotAndAttachmentMessages(t *testing.T) {
	dir := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-05.json": `[
			{"type":"message","subtype":"bot_message","bot_id":"B1","username":"deploybot","text":"","ts":"1767600100.000001",
			 "attachments":[{"fallback":"Deploy 42 done","pretext":"Deploy finished:","title":"Build 42","text":"All <https://ci.example/42|checks> green",
			   "fields":[{"title":"Env","value":"prod"},{"title":"Duration","value":93}],"from_url":"https://ci.example/42"}]},
			{"type":"message","subtype":"bot_message","bot_id":"B2","bot_profile":{"name":"Pager"},"text":"Alert fired","ts":"1767600200.000002"},
			{"type":"message","subtype":"bot_message","bot_id":"B3","text":"","ts":"1767600300.000003","attachments":[{"fallback":"[repo] 1 new commit"}]},
			{"type":"message","user":"U1","text":"see <https://gh.example/r>","ts":"1767600400.000004",
			 "attachments":[{"fallback":"GitHub: r","title":"org/r","text":"A tool for things","from_url":"https://gh.example/r"}]},
			{"type":"message","user":"U2","text":"","ts":"1767600500.000005","attachments":[{"fallback":"800x600px image"}]}
		]`,
	})
	out, rep := readertest.Run(t, SlackReader{}, dir)
	if rep.Sum.Failures != 0 {
		t.Fatal(rep.Sum.Errors)
	}
	msgs := slackMsgs(t, out, "#phoenix")
	want := []struct{ ref, author, text string }{
		{"slack:phoenix:1767600100.000001", "deploybot", "Deploy finished:\nBuild 42\nAll checks (https://ci.example/42) green\nEnv: prod\nDuration: 93"},
		{"slack:phoenix:1767600200.000002", "Pager", "Alert fired"},
		{"slack:phoenix:1767600300.000003", "B3", "[repo] 1 new commit"},
		{"slack:phoenix:1767600400.000004", "Ana Souza", "see https://gh.example/r\norg/r\nA tool for things"},
		{"slack:phoenix:1767600500.000005", "Sam Rivera", "800x600px image"},
	}
	if len(msgs) != len(want) {
		t.Fatalf("messages = %d, want %d: %+v", len(msgs), len(want), msgs)
	}
	for i, w := range want {
		if m := msgs[i]; m.Ref != w.ref || m.Author != w.author || m.Text != w.text {
			t.Errorf("message %d = %q by %q (%s), want %q by %q (%s)", i, m.Text, m.Author, m.Ref, w.text, w.author, w.ref)
		}
	}
}

func TestSlackFilesAndFileComments(t *testing.T) {
	dir := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-05.json": `[
			{"type":"message","subtype":"file_share","user":"U1","text":"<@U1> uploaded a file: <https://x.example/f|plan>","ts":"1767600100.000001",
			 "file":{"name":"plan.pdf","title":"plan","mimetype":"application/pdf","size":2048}},
			{"type":"message","subtype":"file_comment","text":"<@U2> commented on <@U1>'s file plan: Looks good","ts":"1767600200.000002",
			 "comment":{"user":"U2","comment":"Looks good, ship it","timestamp":1767600200},"file":{"name":"plan.pdf","mimetype":"application/pdf","size":2048}},
			{"type":"message","user":"U2","text":"","ts":"1767600300.000003","files":[{"name":"a.png","mimetype":"image/png","size":10},{"name":"b.txt","mimetype":"text/plain","size":5}]}
		]`,
	})
	out, rep := readertest.Run(t, SlackReader{}, dir)
	if rep.Sum.Failures != 0 {
		t.Fatal(rep.Sum.Errors)
	}
	msgs := slackMsgs(t, out, "#phoenix")
	if len(msgs) != 3 {
		t.Fatalf("messages = %+v", msgs)
	}
	if m := msgs[0]; m.Text != "Ana Souza uploaded a file: plan (https://x.example/f)" || len(m.Attachments) != 1 ||
		m.Attachments[0] != (abi.Attachment{Name: "plan.pdf", ContentType: "application/pdf", Size: 2048}) {
		t.Errorf("file share = %+v", m)
	}
	if m := msgs[1]; m.Author != "Sam Rivera" || m.Text != "Looks good, ship it" || m.TimestampMS != 1767600200000 || len(m.Attachments) != 1 {
		t.Errorf("file comment = %+v", m)
	}
	if m := msgs[2]; m.Text != "[file: a.png]\n[file: b.txt]" || len(m.Attachments) != 2 || m.Attachments[1].Name != "b.txt" {
		t.Errorf("files without text = %+v", m)
	}
}

func TestSlackThreadReplies(t *testing.T) {
	long := strings.Repeat("word ", 20) // 100 characters
	dir := readertest.SlackExportDir(t, map[string]string{
		"phoenix/2026-01-05.json": `[
			{"type":"message","user":"U1","text":"Should we ship   on Friday? ` + long + `","ts":"1767600100.000200","thread_ts":"1767600100.000200",
			 "replies":[{"user":"U2","ts":"1767600200.000300"},{"user":"U2","ts":"1767600250.000350"}]},
			{"type":"message","user":"U2","text":"Yes","ts":"1767600200.000300","thread_ts":"1767600100.000200"},
			{"type":"message","user":"U2","text":"(old export: no thread_ts)","ts":"1767600250.000350"},
			{"type":"message","user":"U1","text":"Orphan reply","ts":"1767600300.000400","thread_ts":"1767500000.000100"}
		]`,
		// a reply a day later, in a later day file: far from its parent
		"phoenix/2026-01-06.json": `[{"type":"message","user":"U2","text":"Shipped","ts":"1767700100.000500","thread_ts":"1767600100.000200"}]`,
	})
	out, _ := readertest.Run(t, SlackReader{}, dir)
	msgs := slackMsgs(t, out, "#phoenix")
	if len(msgs) != 5 {
		t.Fatalf("messages = %+v", msgs)
	}
	if !strings.HasPrefix(msgs[0].Text, "Should we ship   on Friday?") || msgs[0].ReplyTo != "" {
		t.Errorf("the parent keeps its text and replies to nothing: %+v", msgs[0])
	}
	// Each reply links to its parent as metadata (by thread_ts, by the parent's
	// "replies", or to a parent outside the export); the text is the reply's own.
	parent := "slack:phoenix:1767600100.000200"
	for i, want := range []struct{ text, replyTo string }{
		{"Yes", parent},
		{"(old export: no thread_ts)", parent},
		{"Orphan reply", "slack:phoenix:1767500000.000100"},
		{"Shipped", parent},
	} {
		if m := msgs[i+1]; m.Text != want.text || m.ReplyTo != want.replyTo {
			t.Errorf("reply %d = %q replying to %q, want %q replying to %q", i+1, m.Text, m.ReplyTo, want.text, want.replyTo)
		}
	}
	if msgs[1].Author != "Sam Rivera" || msgs[1].Ref != "slack:phoenix:1767600200.000300" {
		t.Errorf("reply = %+v", msgs[1])
	}
}

func TestSlackBadDayFiles(t *testing.T) {
	dir := readertest.SlackExportDir(t, map[string]string{
		"channels.json": `[{"id":"C1","name":"phoenix"},{"id":"C2","name":"general"},{"id":"C3","name":"empty"},{"id":"C4","name":"../escape"}]`,
		"general/2026-01-05.json": `[{"type":"message","user":"U1","text":"no ts here"},{"type":"message","user":"U1","text":"bad ts","ts":"yesterday"},
			{"type":"message","user":"U2","text":"this one is fine","ts":"1767600000.000001"}]`,
		"general/2026-01-06.json": `[{"type":"message","user":"U1","text":"broken`,
		"general/notes.txt":       "not a day file",
		"phoenix/2026-01-05.json": `[{"type":"message","user":"U1","text":"hello","ts":"1767600100.000200"}]`,
		"README.md":               "# my export",
		"integration_logs.json":   `{"logs":[]}`,
	})
	out, rep := readertest.Run(t, SlackReader{}, dir)
	gen := slackMsgs(t, out, "#general")
	if len(gen) != 1 || gen[0].Text != "this one is fine" {
		t.Fatalf("general must keep its good message: %+v", gen)
	}
	if len(slackMsgs(t, out, "#phoenix")) != 1 || len(out.Sources) != 2 {
		t.Errorf("sources = %+v", out.Sources)
	}
	if rep.Sum.Failures != 2 {
		t.Fatalf("want 2 failures (missing ts, broken JSON), got %v", rep.Sum.Errors)
	}
	var sawTS, sawJSON bool
	for _, e := range rep.Sum.Errors {
		switch filepath.Base(e.Path) {
		case "2026-01-05.json":
			sawTS = strings.Contains(e.Error(), "#general") && strings.Contains(e.Error(), "message 1 (no ts)") && strings.Contains(e.Error(), `message 2 (ts "yesterday" is not a number)`)
		case "2026-01-06.json":
			sawJSON = strings.Contains(e.Error(), "not valid JSON") && strings.Contains(e.Error(), "byte") && strings.Contains(e.Error(), "#general")
		}
	}
	if !sawTS || !sawJSON {
		t.Errorf("error lines must name the day file and what is wrong: %v", rep.Sum.Errors)
	}
	if rep.Sum.Files != 5 {
		t.Errorf("files = %d, want 5 (users, channels, 3 day files)", rep.Sum.Files)
	}
	if rep.Sum.SkippedBy[ReasonSlackNotDay] != 1 || rep.Sum.SkippedBy[ReasonSlackOther] != 1 || rep.Sum.Skipped != 2 {
		t.Errorf("skips = %v, want notes.txt and README.md", rep.Sum.SkippedBy)
	}
}

func TestSlackSymlinksRefused(t *testing.T) {
	outside := readertest.WriteFiles(t, map[string]string{
		"users.json":          `[{"id":"U1","name":"mallory","real_name":"Mallory Outside"}]`,
		"secret/2026-01.json": `[{"type":"message","user":"U1","text":"secret outside the export","ts":"1767600100.000200"}]`,
		"day.json":            `[{"type":"message","user":"U1","text":"linked day file","ts":"1767600300.000200"}]`,
	})
	dir := readertest.SlackExportDir(t, map[string]string{
		"users.json":              "-",
		"channels.json":           `[{"id":"C1","name":"phoenix"},{"id":"C2","name":"secret"}]`,
		"phoenix/2026-01-05.json": `[{"type":"message","user":"U1","text":"inside","ts":"1767600200.000200","user_profile":{"real_name":"Ana Souza","name":"ana"}}]`,
	})
	for link, target := range map[string]string{
		"users.json":              filepath.Join(outside, "users.json"),
		"secret":                  filepath.Join(outside, "secret"),
		"phoenix/2026-01-06.json": filepath.Join(outside, "day.json"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Skipf("symbolic links unsupported: %v", err)
		}
	}
	out, rep := readertest.Run(t, SlackReader{}, dir)
	if rep.Sum.SkippedBy[readkit.ReasonSymlink] != 3 {
		t.Errorf("symlink skips = %v (%v), want users.json, the channel folder and the day file", rep.Sum.SkippedBy, rep.Sum.Skips)
	}
	for _, s := range out.Sources {
		for _, m := range s.Messages {
			if strings.Contains(m.Text, "outside") && m.Text != "inside" || m.Text == "linked day file" || strings.Contains(m.Author, "Mallory") {
				t.Errorf("read through a symbolic link: %+v", m)
			}
		}
	}
	msgs := slackMsgs(t, out, "#phoenix")
	if len(msgs) != 1 || msgs[0].Author != "Ana Souza" {
		t.Errorf("phoenix = %+v, want its one message named from user_profile", msgs)
	}
	if rep.Sum.Failures != 0 {
		t.Errorf("failures: %v", rep.Sum.Errors)
	}
}

func TestSlackWithoutUsersJSON(t *testing.T) {
	dir := readertest.SlackExportDir(t, map[string]string{
		"users.json":    "-",
		"channels.json": `[{"id":"C1","name":"alpha"},{"id":"C2","name":"beta"}]`,
		"groups.json":   `[{"id":"G1","name":"private-ops"}]`,
		"mpims.json":    `[{"id":"G2","name":"mpdm-ana--sam-1"}]`,
		"dms.json":      `[{"id":"D1","members":["U1","U2"]}]`,
		// alpha mentions U2 before U2's first message (in beta)
		"alpha/2026-01-05.json": `[{"type":"message","user":"U1","text":"ask <@U2>","ts":"1767600100.000001","user_profile":{"real_name":"Ana Souza","display_name":"ana","name":"ana.souza"}}]`,
		"beta/2026-01-06.json": `[{"type":"message","user":"U2","text":"here","ts":"1767700100.000001","user_profile":{"real_name":"","display_name":"sam","name":"sam"}},
			{"type":"message","user":"U9","text":"who am I","ts":"1767700200.000001"}]`,
		"private-ops/2026-01-05.json":     `[{"type":"message","user":"U1","text":"private note","ts":"1767600200.000001"}]`,
		"mpdm-ana--sam-1/2026-01-05.json": `[{"type":"message","user":"U2","text":"group dm","ts":"1767600300.000001"}]`,
		"D1/2026-01-05.json":              `[{"type":"message","user":"U2","text":"direct","ts":"1767600400.000001"}]`,
	})
	out, rep := readertest.Run(t, SlackReader{}, dir)
	if rep.Sum.Failures != 0 {
		t.Fatal(rep.Sum.Errors)
	}
	alpha := slackMsgs(t, out, "#alpha")
	if len(alpha) != 1 || alpha[0].Author != "Ana Souza" || alpha[0].AuthorAddr != "ana.souza" || alpha[0].Text != "ask sam" {
		t.Errorf("alpha = %+v", alpha)
	}
	beta := slackMsgs(t, out, "#beta")
	if len(beta) != 2 || beta[0].Author != "sam" || beta[1].Author != "U9" {
		t.Errorf("beta = %+v", beta)
	}
	if m := slackMsgs(t, out, "#private-ops"); len(m) != 1 || m[0].Ref != "slack:private-ops:1767600200.000001" {
		t.Errorf("groups.json conversation = %+v", m)
	}
	if m := slackMsgs(t, out, "#mpdm-ana--sam-1"); len(m) != 1 {
		t.Errorf("mpims.json conversation = %+v", m)
	}
	dm := slackMsgs(t, out, "@D1")
	if len(dm) != 1 || dm[0].Ref != "slack:D1:1767600400.000001" || dm[0].Author != "sam" {
		t.Errorf("dms.json conversation = %+v", dm)
	}
	for _, s := range out.Sources {
		if s.SourceID == "slack:@D1/2026-01" && s.Title != "DM Ana Souza, sam (2026-01)" {
			t.Errorf("DM title = %q", s.Title)
		}
	}
	if rep.Sum.Files != 9 {
		t.Errorf("files = %d, want 9 (channels, groups, mpims, dms, 5 day files)", rep.Sum.Files)
	}
}
