// Package memtreetest holds test fixtures shared by the store's tests
// (internal/memtree) and the ranking's (internal/retrieval).
package memtreetest

import (
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// MS is the epoch milliseconds of an RFC 3339 time; it panics on a malformed one
// (fixtures are written by hand).
func MS(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// Sources is a small hand-made memory: a mail thread, a chat channel and a
// document, shared by the store's and the ranking's tests.
func Sources() []memtree.SourceInput {
	return []memtree.SourceInput{
		{
			Kind: memtree.KindEmail, SourceID: "email:brakes-1@kestrel.example", Title: "Brake repair quote",
			Provider: "mbox", Origin: "mail/inbox.mbox#1",
			Messages: []memtree.MessageInput{
				{Ref: "brakes-1@kestrel.example", Author: "Alice Martin", AuthorAddr: "alice@kestrel.example",
					To: []string{"Bob Stone <bob@garage.example>"}, Subject: "Brake repair quote",
					TimestampMS: MS("2026-02-03T09:00:00Z"),
					Text:        "Hi Bob,\n\nThe car makes a grinding noise when braking. Could you send a quote for new brake pads?\n\nThanks, Alice",
					Attachments: []abi.Attachment{{Name: "photo.jpg", ContentType: "image/jpeg", Size: 1234}}},
				{Ref: "brakes-2@garage.example", Author: "Bob Stone", AuthorAddr: "bob@garage.example",
					To: []string{"Alice Martin <alice@kestrel.example>"}, Cc: []string{"carol@garage.example"}, Subject: "Re: Brake repair quote",
					TimestampMS: MS("2026-02-04T10:30:00Z"),
					Text:        "Pads and rotors come to 420 EUR including labour. See https://garage.example/quote/77. #brakes"},
			},
		},
		{
			Kind: memtree.KindChat, SourceID: "slack:#phoenix", Title: "#phoenix", Provider: "slack",
			Messages: []memtree.MessageInput{
				{Ref: "slack:phoenix:1", Author: "Dana Ruiz", TimestampMS: MS("2026-03-02T14:03:00Z"), Text: "Launch checklist is ready, @erik please review"},
				{Ref: "slack:phoenix:2", Author: "Erik Lund", TimestampMS: MS("2026-03-02T14:10:00Z"), Text: "Reviewed. The rollout slips one week because of the billing migration."},
				{Ref: "slack:phoenix:3", Author: "Dana Ruiz", TimestampMS: MS("2026-03-05T08:00:00Z"), Text: "New launch date is March 16. #launch"},
			},
		},
		{
			Kind: memtree.KindDocument, SourceID: "doc:notes/lisbon.md", Title: "Lisbon trip", Provider: "markdown",
			Tags: []string{"travel"},
			Messages: []memtree.MessageInput{
				{Ref: "docs/notes/lisbon.md", TimestampMS: MS("2026-01-20T12:00:00Z"),
					Text: "Flights booked for April.\n\nHotel near Alfama, three nights.\n\nVisit the tram 28 and the Belem tower."},
			},
		},
	}
}
