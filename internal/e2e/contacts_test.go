package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// contactsInput writes an address book in two formats (a vCard and a Google
// Contacts CSV naming the same person), mail from two of Micah's addresses,
// and chat under a nickname (WhatsApp) and a handle (a Slack export), with
// Dana's messages beside them on the same subject.
func contactsInput(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"people.vcf": "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Micah Stubbs\r\nN:Stubbs;Micah;;;\r\nNICKNAME:Mick\r\n" +
			"EMAIL;TYPE=INTERNET:micah@home.example\r\nEMAIL;TYPE=INTERNET:mstubbs@work.example\r\nEND:VCARD\r\n",
		"google.csv": "First Name,Middle Name,Last Name,Nickname,E-mail 1 - Label,E-mail 1 - Value,IM 1 - Label,IM 1 - Value\n" +
			"Micah,,Stubbs,Stubbsy,* Other,micah.stubbs@old.example,Slack,micah.s\n" +
			"Dana,,Ruiz,,* Home,dana@home.example,,\n",
		"mail/inbox.mbox": "From mstubbs@work.example Mon Jan  5 10:00:00 2026\n" +
			"From: M. Stubbs <mstubbs@work.example>\nTo: Lee Wong <lee@corp.example>\nSubject: quarterly numbers\n" +
			"Date: Mon, 05 Jan 2026 10:00:00 +0000\nMessage-ID: <m1@work.example>\n\nThe quarterly budget needs another review before Friday.\n\n" +
			"From micah@home.example Tue Jan  6 09:00:00 2026\n" +
			"From: micah@home.example\nTo: lee@corp.example\nSubject: offsite\n" +
			"Date: Tue, 06 Jan 2026 09:00:00 +0000\nMessage-ID: <m2@home.example>\n\nThe harbour venue is booked for the offsite.\n\n" +
			"From dana@home.example Wed Jan  7 09:00:00 2026\n" +
			"From: Dana Ruiz <dana@home.example>\nTo: lee@corp.example\nSubject: party\n" +
			"Date: Wed, 07 Jan 2026 09:00:00 +0000\nMessage-ID: <d1@home.example>\n\nThe budget for the party is twice the budget we had.\n",
		"chat/WhatsApp Chat with Mick.txt": "[08/01/2026, 12:00:00] Mick: the budget numbers look wrong to me\n" +
			"[08/01/2026, 12:01:00] Mick: the forecast sheet double counts travel\n",
		// a Slack export: Micah's account has his handle and no real name
		"chat/slack/users.json": `[{"id":"U1","name":"micah.s","profile":{"display_name":"micah.s"}},` +
			`{"id":"U2","name":"dana","real_name":"Dana Ruiz","profile":{"real_name":"Dana Ruiz","display_name":"dana"}}]`,
		"chat/slack/channels.json":           `[{"id":"C1","name":"finance"},{"id":"C2","name":"social"}]`,
		"chat/slack/finance/2026-01-09.json": `[{"type":"message","user":"U1","text":"budget spreadsheet shared in the drive","ts":"1767960000.000100"}]`,
		"chat/slack/social/2026-01-09.json":  `[{"type":"message","user":"U2","text":"party budget approved, cake ordered","ts":"1767970000.000100"}]`,
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// micahWrote are what Micah wrote, under each of his names and addresses;
// danaWrote what Dana did.
var (
	micahWrote = []string{"quarterly budget needs another review", "harbour venue is booked", "budget numbers look wrong", "budget spreadsheet shared"}
	danaWrote  = []string{"budget for the party", "party budget approved"}
)

// hitTexts are the texts of a result's chunks (snippet and cited messages).
func hitTexts(sc map[string]any) []string {
	var out []string
	for _, c := range sc["chunks"].([]any) {
		h := c.(map[string]any)
		s := fmt.Sprint(h["snippet"])
		if ms, ok := h["messages"].([]any); ok {
			for _, m := range ms {
				s += " " + fmt.Sprint(m.(map[string]any)["text"])
			}
		}
		out = append(out, s)
	}
	return out
}

// firstAt is the index of the first text saying w, or -1.
func firstAt(texts []string, w string) int {
	for i, s := range texts {
		if strings.Contains(s, w) {
			return i
		}
	}
	return -1
}

// TestContactsResolvePeopleThroughTheTools ingests an address book with mail
// and chat from the same people and asks through MCP: every name, nickname,
// address and handle of Micah's contact names one person in tree.browse's
// entity_ids, a search naming Micah (by first name or nickname) is restricted
// to what he wrote under any of them and says which contact it read, and
// tree.top_entities lists him once, under the contact's name.
func TestContactsResolvePeopleThroughTheTools(t *testing.T) {
	e := newEnv(t)
	input := contactsInput(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := e.command(ctx, "ingest", input).CombinedOutput()
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "3 contacts") {
		t.Errorf("ingest summary does not count the three contacts (Micah in both files, Dana):\n%s", out)
	}
	cs := connect(t, e, "E2E Contacts")
	schemas := outputSchemas(t, cs)

	for _, v := range []string{"Micah", "micah", "Mick", "Stubbsy", "micah.s", "M. Stubbs", "Micah Stubbs", "mstubbs@work.example", "micah@home.example", "micah.stubbs@old.example"} {
		sc := callOK(t, cs, schemas, "tree.browse", fmt.Sprintf(`{"entity_ids":[%q],"k":50}`, v))
		texts := hitTexts(sc)
		for _, w := range micahWrote {
			if firstAt(texts, w) < 0 {
				t.Errorf("tree.browse entity_ids [%q] misses what Micah wrote (%q); resolved %v", v, w, sc["resolved"])
			}
		}
		for _, w := range danaWrote {
			if firstAt(texts, w) >= 0 {
				t.Errorf("tree.browse entity_ids [%q] lists what Dana wrote (%q); resolved %v", v, w, sc["resolved"])
			}
		}
		if !strings.Contains(fmt.Sprint(sc["resolved"]), "person:micah stubbs") && !strings.Contains(fmt.Sprint(sc["hint"]), "Micah Stubbs") {
			t.Errorf("tree.browse entity_ids [%q] does not say it read the contact Micah Stubbs: resolved %v, hint %v", v, sc["resolved"], sc["hint"])
		}
	}

	// A question naming Micah by his first name or a nickname is about what he
	// wrote: his messages under every address and handle come before Dana's on
	// the same subject, and the result says which contact the name was read as.
	for _, q := range []string{"what did Micah say about the budget", "what did Mick say about the budget", "budget from Stubbsy"} {
		sc := callOK(t, cs, schemas, "memory.search", fmt.Sprintf(`{"query":%q,"k":10}`, q))
		texts := hitTexts(sc)
		last := -1
		for _, w := range []string{"quarterly budget needs another review", "budget numbers look wrong", "budget spreadsheet shared"} {
			i := firstAt(texts, w)
			if i < 0 {
				t.Errorf("memory.search %q misses what Micah wrote (%q):\n%s", q, w, strings.Join(texts, "\n"))
			}
			last = max(last, i)
		}
		for _, w := range danaWrote {
			if i := firstAt(texts, w); i >= 0 && i < last {
				t.Errorf("memory.search %q ranks what Dana wrote (%q) at %d, before Micah's (last at %d):\n%s", q, w, i, last, strings.Join(texts, "\n"))
			}
		}
		res := fmt.Sprint(sc["resolved"])
		if !strings.Contains(res, "query") || !strings.Contains(res, "person:micah stubbs") {
			t.Errorf("memory.search %q does not say the name was read as the contact Micah Stubbs: resolved %v", q, sc["resolved"])
		}
	}
	sc := callOK(t, cs, schemas, "memory.recall", `{"query":"what did Mick say about the budget","k":10}`)
	if !strings.Contains(fmt.Sprint(sc["resolved"]), "person:micah stubbs") {
		t.Errorf("memory.recall does not say Mick was read as the contact Micah Stubbs: resolved %v", sc["resolved"])
	}

	// One person per contact in the entity listings: the contact's name, its
	// aliases' chunks counted once.
	for _, kind := range []string{"person", ""} {
		args := `{"k":50}`
		if kind != "" {
			args = fmt.Sprintf(`{"kind":%q,"k":50}`, kind)
		}
		sc := callOK(t, cs, schemas, "tree.top_entities", args)
		var micah []map[string]any
		for _, x := range sc["entities"].([]any) {
			ent := x.(map[string]any)
			id := fmt.Sprint(ent["entity_id"])
			switch id {
			case "person:micah stubbs":
				micah = append(micah, ent)
			case "person:mick", "person:m. stubbs", "person:micah.s", "person:micah@home.example":
				t.Errorf("tree.top_entities kind %q lists %s beside the contact Micah Stubbs", kind, id)
			case "email:mstubbs@work.example", "email:micah@home.example":
				if kind == "" {
					t.Errorf("tree.top_entities (all kinds) lists %s beside the contact Micah Stubbs", id)
				}
			}
		}
		if len(micah) != 1 {
			t.Fatalf("tree.top_entities kind %q: %d rows for Micah Stubbs, want 1: %v", kind, len(micah), sc["entities"])
		}
		if micah[0]["surface"] != "Micah Stubbs" || micah[0]["count"].(float64) != 4 {
			t.Errorf("tree.top_entities kind %q: Micah Stubbs as %v, want surface \"Micah Stubbs\" and count 4 (one per chunk he wrote in)", kind, micah[0])
		}
		total := int(sc["total"].(float64))
		if total != len(sc["entities"].([]any)) {
			t.Errorf("tree.top_entities kind %q: total %d, listed %d on one page", kind, total, len(sc["entities"].([]any)))
		}
	}
}
