package ingest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

// TestTeamsGraphMessages reads Microsoft Teams messages as the Graph API
// returns them: a page of a 1:1 chat (newest first, HTML bodies, a file, a
// quoted reply, a system event, a deleted message), and channel messages saved
// as one array (a subject, a reply to a post, an app's message).
func TestTeamsGraphMessages(t *testing.T) {
	page := `{"@odata.context":"https://graph.microsoft.com/v1.0/$metadata#chats('19%3Aabc%40unq.gbl.spaces')/messages","@odata.count":4,` +
		`"@odata.nextLink":"https://graph.microsoft.com/v1.0/chats/19:abc@unq.gbl.spaces/messages?$skiptoken=x","value":[` +
		`{"id":"1767607500000","replyToId":null,"messageType":"message","createdDateTime":"2026-01-05T10:05:00.000Z","deletedDateTime":null,"subject":null,"chatId":"19:abc@unq.gbl.spaces",` +
		`"from":{"application":null,"device":null,"user":{"@odata.type":"#microsoft.graph.teamworkUserIdentity","id":"u2","displayName":"Dana Ruiz","userIdentityType":"aadUser"}},` +
		`"body":{"contentType":"html","content":"<attachment id=\"1767607200000\"></attachment><p>Agreed &amp; signed.</p>"},` +
		`"attachments":[{"id":"1767607200000","contentType":"messageReference","content":"{\"messageId\":\"1767607200000\"}","name":null}],"mentions":[],"reactions":[]},` +
		`{"id":"1767607400000","messageType":"message","createdDateTime":"2026-01-05T10:03:20Z","deletedDateTime":"2026-01-05T10:04:00Z","chatId":"19:abc@unq.gbl.spaces",` +
		`"from":{"user":{"displayName":"Dana Ruiz"}},"body":{"contentType":"html","content":"<p>oops</p>"},"attachments":[]},` +
		`{"id":"1767607300000","messageType":"systemEventMessage","createdDateTime":"2026-01-05T10:01:40Z","chatId":"19:abc@unq.gbl.spaces","from":null,` +
		`"body":{"contentType":"html","content":"<systemEventMessage/>"},"eventDetail":{"@odata.type":"#microsoft.graph.membersAddedEventMessageDetail"}},` +
		`{"id":"1767607200000","messageType":"message","createdDateTime":"2026-01-05T10:00:00Z","deletedDateTime":null,"chatId":"19:abc@unq.gbl.spaces",` +
		`"from":{"user":{"id":"u1","displayName":"Micah Stubbs"}},"body":{"contentType":"html","content":"<div><div>The contract is attached.<br>Please sign.</div></div>"},` +
		`"attachments":[{"id":"f1","contentType":"reference","contentUrl":"https://contoso.sharepoint.com/contract.docx","name":"contract.docx"}]}]}`
	if r := detectedBy(t, readertest.WriteFile(t, "chat-micah.json", page)); r != "chat.TeamsGraphReader" {
		t.Errorf("page read by %s", r)
	}
	rep := appCheck(t, chat.TeamsGraphReader{}, "chat-micah.json", page, true, []appWant{
		{"Micah Stubbs", "The contract is attached.\nPlease sign.\n[attachment: contract.docx]", 2026, 1, 5, 10, 0, 0},
		{"Dana Ruiz", "Agreed & signed.", 2026, 1, 5, 10, 5, 0},
	})
	notes := fmt.Sprint(rep.Sum.Notes)
	for _, w := range []string{"1 system event", "1 deleted message"} {
		if !strings.Contains(notes, w) {
			t.Errorf("no note %q in %s", w, notes)
		}
	}
	channel := `[{"id":"1","replyToId":null,"messageType":"message","createdDateTime":"2026-02-02T09:00:00Z","subject":"Quarterly budget",` +
		`"channelIdentity":{"teamId":"t1","channelId":"19:finance@thread.tacv2"},"from":{"user":{"displayName":"Micah Stubbs"}},` +
		`"body":{"contentType":"text","content":"Numbers are in the sheet."},"attachments":[]},` +
		`{"id":"2","replyToId":"1","messageType":"message","createdDateTime":"2026-02-02T09:30:00Z",` +
		`"channelIdentity":{"teamId":"t1","channelId":"19:finance@thread.tacv2"},"from":{"application":{"displayName":"Planner"},"user":null},` +
		`"body":{"contentType":"html","content":"<p>Task <b>review budget</b> created</p>"},"attachments":[]}]`
	if r := detectedBy(t, readertest.WriteFile(t, "finance.json", channel)); r != "chat.TeamsGraphReader" {
		t.Errorf("array read by %s", r)
	}
	appCheck(t, chat.TeamsGraphReader{}, "finance.json", channel, true, []appWant{
		{"Micah Stubbs", "Quarterly budget\n\nNumbers are in the sheet.", 2026, 2, 2, 9, 0, 0},
		{"Planner", "Task review budget created", 2026, 2, 2, 9, 30, 0},
	})
	p := readertest.WriteFile(t, "finance.json", channel)
	out, _ := readertest.Run(t, chat.TeamsGraphReader{}, p)
	if len(out.Sources) != 1 || out.Sources[0].Messages[1].ReplyTo != "teams:1" || !strings.HasPrefix(out.Sources[0].SourceID, "teams:19:finance@thread.tacv2/") {
		t.Errorf("channel sources: %+v", out.Sources)
	}
}
