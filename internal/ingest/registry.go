package ingest

import (
	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/mail"
	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// readers lists the format readers in the order the runner asks them whether they
// recognise a file or folder: folder formats first, then the JSON exports whose
// shapes are most specific, then mail, then chat text, then documents. A reader
// that claims a path stops the search, so the order settles overlaps (a WhatsApp
// export and a MimeKit test message are .txt files; a Telegram export is JSON).
func readers() []readkit.Reader {
	return []readkit.Reader{
		chat.SlackReader{},
		mail.MaildirReader{},
		chat.MatrixReader{},
		chat.MattermostReader{},
		chat.SignalReader{},
		chat.TelegramReader{},
		chat.DiscordReader{},
		chat.MessengerReader{},
		chat.GoogleChatReader{},
		chat.HangoutsReader{},
		chat.ZulipReader{},
		chat.TeamsReader{},
		chat.TeamsGraphReader{},
		notes.KeepReader{},
		notes.DayOneReader{},
		notes.RoamReader{},
		jsonReader{},
		mail.MboxReader{},
		mail.EmlxReader{},
		mail.EMLReader{},
		chat.IMessageReader{},
		chat.SignalBackupTxtReader{},
		chat.LineReader{},
		chat.ChatLinesReader{}, // before WhatsApp's: it leaves WhatsApp's layouts to it
		chat.WhatsAppReader{},
		chat.IRCReader{},
		notes.EnexReader{},
		notes.ContactsReader{},
		notes.NotionCSVReader{},
		notes.AppleNotesReader{},
		notes.DocsReader{},
		chatBatchReader{}, // --kind chat only: it forces the chat batch shape
	}
}
