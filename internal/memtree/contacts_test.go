package memtree_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memory"
	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/retrieval"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// contactStore is a store with an address book (Micah Stubbs, Micah Jones,
// Dana Ruiz) and messages under their names, nicknames, addresses and
// handles, among twenty other people each in a chat of their own (1 to 3
// messages, so that listings have ties and pages).
func contactStore(t *testing.T) *memtree.Store {
	t.Helper()
	st, _ := openEmpty(t)
	ctx := context.Background()
	at := func(day, hour int) int64 { return ms(fmt.Sprintf("2026-01-%02dT%02d:00:00Z", day, hour)) }
	chat := func(id string, day int, msgs ...[2]string) memtree.SourceInput {
		src := memtree.SourceInput{Kind: memtree.KindChat, SourceID: id, Title: id, Provider: "slack"}
		for i, m := range msgs {
			src.Messages = append(src.Messages, memtree.MessageInput{Ref: fmt.Sprintf("%s:%d", id, i), Author: m[0], TimestampMS: at(day, 8+i), Text: m[1]})
		}
		return src
	}
	srcs := []memtree.SourceInput{
		{Kind: memtree.KindEmail, SourceID: "email:m1@work.example", Title: "quarterly numbers", Provider: "mbox",
			Messages: []memtree.MessageInput{{Ref: "m1@work.example", Author: "M. Stubbs", AuthorAddr: "mstubbs@work.example",
				To: []string{"lee@corp.example"}, Subject: "quarterly numbers", TimestampMS: at(5, 10),
				Text: "The quarterly budget needs another review before Friday."}}},
		{Kind: memtree.KindEmail, SourceID: "email:d1@home.example", Title: "party", Provider: "mbox",
			Messages: []memtree.MessageInput{{Ref: "d1@home.example", Author: "Dana Ruiz", AuthorAddr: "dana@home.example",
				To: []string{"lee@corp.example"}, Subject: "party", TimestampMS: at(6, 10),
				Text: "The budget for the party is twice the budget we had."}}},
		chat("whatsapp:mick", 7, [2]string{"Mick", "the budget numbers look wrong to me"}, [2]string{"Mick", "the forecast double counts travel"}),
		chat("slack:#finance", 8, [2]string{"micah.s", "budget spreadsheet shared in the drive"}),
		chat("slack:#social", 9, [2]string{"Dana Ruiz", "party budget approved, cake ordered"}),
		chat("slack:#garden", 10, [2]string{"Micah", "the budget for seeds is spent"}),
		chat("slack:#jones", 11, [2]string{"Micah Jones", "my budget report is late"}),
		chat("slack:#ops", 4, [2]string{"Dana Ruiz", "is the ops budget final? the ops budget was due"}, [2]string{"micah.s", "ops budget is final"}),
	}
	for i := 0; i < 20; i++ {
		var msgs [][2]string
		for j := 0; j <= i%3; j++ {
			msgs = append(msgs, [2]string{fmt.Sprintf("Person %c", 'a'+i), fmt.Sprintf("note %d about gardening", j)})
		}
		srcs = append(srcs, chat(fmt.Sprintf("slack:#p%d", i), 12+i%5, msgs...))
	}
	for _, src := range srcs {
		if _, err := st.Ingest(ctx, src); err != nil {
			t.Fatalf("ingest %s: %v", src.SourceID, err)
		}
	}
	if n, err := st.PutContacts(ctx, []memtree.ContactInput{
		{Name: "Micah Stubbs", Given: "Micah", Family: "Stubbs", Nicknames: []string{"Mick"}, Emails: []string{"mstubbs@work.example", "micah@home.example"}, Handles: []string{"micah.s"}},
		{Name: "Micah Jones", Given: "Micah", Family: "Jones"},
		{Name: "Dana Ruiz", Emails: []string{"dana@home.example"}},
	}); err != nil || n != 3 {
		t.Fatalf("PutContacts: %d, %v", n, err)
	}
	return st
}

// TestTopEntitiesListContactsOnce: each contact is one person row, under its
// display name, counting the chunks of all its names and addresses once; a name
// two contacts share ("micah") stays its own row; pages of any size put
// together are the whole listing, in order, and total counts its rows.
func TestTopEntitiesListContactsOnce(t *testing.T) {
	st := contactStore(t)
	ctx := context.Background()
	for _, kind := range []string{"", "person"} {
		full, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: kind, K: 50})
		if err != nil {
			t.Fatal(err)
		}
		if full.Next != 0 || full.Total != len(full.Entities) {
			t.Fatalf("kind %q: one page of 50 holds %d of total %d (next %d)", kind, len(full.Entities), full.Total, full.Next)
		}
		byID := map[string]abi.Entity{}
		for i, e := range full.Entities {
			byID[e.EntityID] = e
			if i > 0 {
				p := full.Entities[i-1]
				if p.Count < e.Count || p.Count == e.Count && (p.LastSeenMS < e.LastSeenMS || p.LastSeenMS == e.LastSeenMS && p.EntityID > e.EntityID) {
					t.Errorf("kind %q: %+v listed before %+v", kind, p, e)
				}
			}
		}
		micah := byID["person:micah stubbs"]
		if micah.Surface != "Micah Stubbs" || micah.Count != 4 || micah.LastSeenMS != ms("2026-01-08T08:00:00Z") {
			t.Errorf("kind %q: Micah Stubbs listed as %+v, want surface Micah Stubbs, 4 chunks (mail, WhatsApp, #finance, #ops), last seen 2026-01-08T08:00", kind, micah)
		}
		if e := byID["person:dana ruiz"]; e.Surface != "Dana Ruiz" || e.Count != 3 {
			t.Errorf("kind %q: Dana Ruiz listed as %+v, want 3 chunks (mail, #social, #ops)", kind, e)
		}
		if e := byID["person:micah"]; e.Count != 1 {
			t.Errorf("kind %q: the name two contacts share (person:micah) is not its own row: %+v", kind, e)
		}
		for _, id := range []string{"person:mick", "person:m. stubbs", "person:micah.s", "email:mstubbs@work.example", "email:dana@home.example"} {
			if _, ok := byID[id]; ok {
				t.Errorf("kind %q: %s listed beside its contact", kind, id)
			}
		}
		if kind == "" {
			if _, ok := byID["email:lee@corp.example"]; !ok {
				t.Errorf("an address of no contact is not listed: %v", full.Entities)
			}
		}
		for _, k := range []int{1, 2, 3, 4, 7, 11} {
			var paged []abi.Entity
			for off, n := 0, 0; ; n++ {
				page, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: kind, K: k, Offset: off})
				if err != nil {
					t.Fatal(err)
				}
				if page.Total != full.Total || n > 100 {
					t.Fatalf("kind %q k %d offset %d: total %d, want %d", kind, k, off, page.Total, full.Total)
				}
				paged = append(paged, page.Entities...)
				if page.Next == 0 {
					break
				}
				off = page.Next
			}
			if !reflect.DeepEqual(paged, full.Entities) {
				t.Errorf("kind %q: pages of %d put together differ from the whole listing:\n%v\nwant\n%v", kind, k, ids(paged), ids(full.Entities))
			}
		}
		past, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: kind, K: 5, Offset: full.Total})
		if err != nil || len(past.Entities) != 0 || past.Total != full.Total {
			t.Errorf("kind %q: a page past the end: %+v, %v", kind, past, err)
		}
	}
	// Another kind is listed as it is: addresses stay addresses.
	mail, err := memory.Default(st).TopEntities(ctx, abi.EntitiesTopRequest{Kind: "email", K: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids(mail.Entities), "email:mstubbs@work.example") || slices.Contains(ids(mail.Entities), "person:micah stubbs") {
		t.Errorf("kind email: %v", ids(mail.Entities))
	}
}

func ids(es []abi.Entity) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.EntityID)
	}
	return out
}

// TestSearchNamesContacts: a query naming a contact by first name, nickname,
// full name or address is restricted to that person's chunks under all their
// names and addresses first, and says which contact it read; a first name two
// contacts share stands for both; a stopword is no name; a query naming no
// contact says nothing.
func TestSearchNamesContacts(t *testing.T) {
	st := contactStore(t)
	ctx := context.Background()
	api := memory.New(st, retrieval.DefaultParams())
	texts := func(hits []abi.ChunkHit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Snippet)
		}
		return out
	}
	micahs := []string{"quarterly budget", "budget numbers look wrong", "budget spreadsheet"}
	for _, c := range []struct {
		query, value string
		to           []string // some of what the value is read as
		first, not   []string // said before anything else; not before them
	}{
		{"what did Mick say about the budget", "mick", []string{"person:micah stubbs", "person:mick", "email:mstubbs@work.example", "person:micah.s"}, micahs, []string{"party", "seeds", "report is late"}},
		{"budget according to Stubbs, Micah", "stubbs micah", []string{"person:micah stubbs", "person:m. stubbs"}, micahs, []string{"party", "report is late"}},
		{"budget mails from mstubbs@work.example", "mstubbs@work.example", []string{"person:micah stubbs", "person:mick"}, micahs, []string{"party", "report is late"}},
		{"what did Micah say about the budget", "micah", []string{"person:micah stubbs", "person:micah jones", "person:micah", "person:mick"}, append(micahs, "seeds", "report is late"), []string{"party"}},
	} {
		res, err := api.Search(ctx, abi.SearchRequest{Query: c.query, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		got := texts(res.Chunks)
		last := -1
		for _, w := range c.first {
			i := slices.IndexFunc(got, func(s string) bool { return strings.Contains(s, w) })
			if i < 0 {
				t.Errorf("%q misses %q:\n%s", c.query, w, strings.Join(got, "\n"))
			}
			last = max(last, i)
		}
		for _, w := range c.not {
			if i := slices.IndexFunc(got, func(s string) bool { return strings.Contains(s, w) }); i >= 0 && i < last {
				t.Errorf("%q ranks %q (%d) before the contact's messages (last at %d):\n%s", c.query, w, i, last, strings.Join(got, "\n"))
			}
		}
		var r *abi.Resolution
		for i := range res.Resolved {
			if strings.EqualFold(res.Resolved[i].Value, c.value) {
				r = &res.Resolved[i]
			}
		}
		if r == nil || r.Filter != "query" {
			t.Errorf("%q: no resolved note for %q: %+v", c.query, c.value, res.Resolved)
			continue
		}
		for _, id := range c.to {
			if !slices.Contains(r.To, id) {
				t.Errorf("%q: %q not read as %s: %+v", c.query, c.value, id, r.To)
			}
		}
		if c.value != "micah" && slices.Contains(r.To, "person:micah jones") {
			t.Errorf("%q: %q read as Micah Jones too: %+v", c.query, c.value, r.To)
		}
		rec, err := api.Recall(ctx, abi.RecallRequest{Query: c.query, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rec.Resolved, res.Resolved) {
			t.Errorf("%q: recall resolved %+v, search %+v", c.query, rec.Resolved, res.Resolved)
		}
	}
	// In a conversation, the contact's turn is the one cited, under any of
	// their names.
	res, err := api.Search(ctx, abi.SearchRequest{Query: "what did Mick say about the ops budget", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	cited := false
	for _, h := range res.Chunks {
		if h.SourceID == "slack:#ops" {
			cited = true
			if h.SourceRef != "slack:#ops:1" {
				t.Errorf("the #ops hit cites %s first (%+v), want Micah's turn slack:#ops:1", h.SourceRef, h.Messages)
			}
		}
	}
	if !cited {
		t.Errorf("no #ops hit: %v", texts(res.Chunks))
	}
	for _, q := range []string{"will the budget be approved", "gardening notes", "budget"} {
		res, err := api.Search(ctx, abi.SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Resolved) != 0 || len(res.Chunks) == 0 {
			t.Errorf("%q names no contact: resolved %+v, %d hits", q, res.Resolved, len(res.Chunks))
		}
	}
}

// TestContactsUnderScope: a principal's scope bounds what the address book
// resolves. Scoped to slack:*, "Micah Stubbs" resolves to the handle his Slack
// messages carry, never to his mail addresses (held only by mail), and Dana,
// whom the scope holds in Slack, is still found; scoped to whatsapp:*, Dana's
// name resolves to nothing, as for a stranger. The operator's search resolves
// everything.
func TestContactsUnderScope(t *testing.T) {
	st := contactStore(t)
	ctx := context.Background()
	resolved := func(ctx context.Context, q string) []string {
		t.Helper()
		res, err := memory.Default(st).Search(ctx, abi.SearchRequest{Query: q, K: 5})
		if err != nil {
			t.Fatal(err)
		}
		var to []string
		for _, r := range res.Resolved {
			to = append(to, r.To...)
		}
		return to
	}
	scoped := func(allow string) context.Context {
		sc, err := index.ParseScope([]string{allow}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return index.WithScope(ctx, sc)
	}
	if all := resolved(ctx, "budget from Micah Stubbs"); !slices.Contains(all, "email:mstubbs@work.example") || !slices.Contains(all, "person:micah.s") {
		t.Fatalf("operator: Micah Stubbs resolves to %v, want his addresses and handle", all)
	}
	slack := resolved(scoped("slack:*"), "budget from Micah Stubbs")
	if !slices.Contains(slack, "person:micah stubbs") || !slices.Contains(slack, "person:micah.s") {
		t.Errorf("slack:* scope: Micah Stubbs resolves to %v, want his person id and his Slack handle", slack)
	}
	for _, id := range slack {
		if strings.HasPrefix(id, "email:") {
			t.Errorf("slack:* scope: Micah Stubbs resolves to %s, an address only mail holds", id)
		}
	}
	if dana := resolved(scoped("slack:*"), "party budget from Dana Ruiz"); !slices.Contains(dana, "person:dana ruiz") || slices.Contains(dana, "email:dana@home.example") {
		t.Errorf("slack:* scope: Dana Ruiz resolves to %v, want her person id without her mail address", dana)
	}
	if none := resolved(scoped("whatsapp:*"), "party budget from Dana Ruiz"); len(none) != 0 {
		t.Errorf("whatsapp:* scope: Dana Ruiz, whom the scope does not hold, resolves to %v", none)
	}

	// Browse's entity_ids go through the same address book, under the same rule.
	browse := func(ctx context.Context, v string) []string {
		t.Helper()
		res, err := memory.Default(st).ListChunks(ctx, abi.ChunksListRequest{EntityIDs: []string{v}, K: 20})
		if err != nil {
			t.Fatal(err)
		}
		var to []string
		for _, r := range res.Resolved {
			to = append(to, r.To...)
		}
		for _, h := range res.Chunks {
			if !strings.HasPrefix(h.SourceID, "slack:") && ctx != context.Background() {
				t.Errorf("slack:* scope: browse %q returned %s", v, h.SourceID)
			}
		}
		return to
	}
	if all := browse(ctx, "Mick"); !slices.Contains(all, "email:micah@home.example") && !slices.Contains(all, "email:mstubbs@work.example") {
		t.Fatalf("operator: browse Mick resolves to %v, want his addresses", all)
	}
	for _, id := range browse(scoped("slack:*"), "Mick") {
		if strings.HasPrefix(id, "email:") || id == "person:mick" {
			t.Errorf("slack:* scope: browse Mick resolves to %s, which only mail or WhatsApp holds", id)
		}
	}
}
