package ingest

import (
	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
)

// Kinds accepted by Options.Kind. Each format family's package names its own
// readers' kinds; they are repeated here so that callers name every kind through
// this package.
const (
	KindAuto = ""
	// KindChat forces the chat batch JSON shape ({platform, channel_label,
	// messages}); KindReference reads the reference JSON shapes (ChatBatch,
	// EmailThread, DocumentInput). Both are read here (jsoninputs.go).
	KindChat      = "chat"
	KindReference = "reference"

	// Mail (package mail).
	KindMbox    = mail.KindMbox
	KindEML     = mail.KindEML
	KindEmlx    = mail.KindEmlx
	KindMaildir = mail.KindMaildir

	// Chat (package chat).
	KindSlack      = chat.KindSlack
	KindTelegram   = chat.KindTelegram
	KindWhatsApp   = chat.KindWhatsApp
	KindDiscord    = chat.KindDiscord
	KindMessenger  = chat.KindMessenger
	KindGoogleChat = chat.KindGoogleChat
	KindIRC        = chat.KindIRC
	KindIMessage   = chat.KindIMessage
	KindLINE       = chat.KindLINE
	KindMatrix     = chat.KindMatrix
	KindSignal     = chat.KindSignal
	KindHangouts   = chat.KindHangouts
	KindZulip      = chat.KindZulip
	KindTeams      = chat.KindTeams
	KindChatLines  = chat.KindChatLines
	KindMattermost = chat.KindMattermost

	// Notes, documents and address books (package notes).
	KindDocs       = notes.KindDocs
	KindAppleNotes = notes.KindAppleNotes
	KindEnex       = notes.KindEnex
	KindContacts   = notes.KindContacts
	KindNotionCSV  = notes.KindNotionCSV
	KindKeep       = notes.KindKeep
	KindDayOne     = notes.KindDayOne
	KindRoam       = notes.KindRoam
)
