package ingest

import (
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// mailMsg is one parsed message waiting to be threaded.
type mailMsg struct {
	id      string   // Message-ID without brackets (synthesised when missing or not one)
	refs    []string // References that look like Message-IDs, oldest first
	replyTo string   // In-Reply-To, when it looks like a Message-ID
	date    time.Time
	// dateGuessed says the message's time is not its Date header's (it had none,
	// or an unreadable one): it comes from a Received header, the mbox separator,
	// the Maildir name or the file time.
	dateGuessed bool
	seq         int    // discovery order, breaks date ties
	origin      string // "path" or "path message N"
	prov        string // "mbox", "eml" or "maildir"
	msg         memtree.MessageInput
}
