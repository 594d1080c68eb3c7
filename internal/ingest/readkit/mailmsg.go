package readkit

import (
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// MailMessage is one parsed message waiting to be threaded.
type MailMessage struct {
	ID      string   // Message-ID without brackets (synthesised when missing or not one)
	Refs    []string // References that look like Message-IDs, oldest first
	ReplyTo string   // In-Reply-To, when it looks like a Message-ID
	Date    time.Time
	// DateGuessed says the message's time is not its Date header's (it had none,
	// or an unreadable one): it comes from a Received header, the mbox separator,
	// the Maildir name or the file time.
	DateGuessed bool
	seq         int    // discovery order, breaks date ties
	Origin      string // "path" or "path message N"
	Prov        string // "mbox", "eml" or "maildir"
	Msg         memtree.MessageInput
}
