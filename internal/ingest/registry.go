package ingest

// readers lists the format readers in the order the runner asks them whether they
// recognise a file or folder: folder formats first, then the JSON exports whose
// shapes are most specific, then mail, then chat text, then documents. A reader
// that claims a path stops the search, so the order settles overlaps (a WhatsApp
// export and a MimeKit test message are .txt files; a Telegram export is JSON).
func readers() []reader {
	return []reader{
		slackReader{},
		maildirReader{},
		matrixReader{},
		mattermostReader{},
		signalReader{},
		telegramReader{},
		discordReader{},
		messengerReader{},
		googleChatReader{},
		hangoutsReader{},
		zulipReader{},
		teamsReader{},
		teamsGraphReader{},
		keepReader{},
		dayOneReader{},
		roamReader{},
		jsonReader{},
		mboxReader{},
		emlxReader{},
		emlReader{},
		imessageReader{},
		signalBackupTxtReader{},
		lineReader{},
		chatLinesReader{}, // before WhatsApp's: it leaves WhatsApp's layouts to it
		whatsappReader{},
		ircReader{},
		enexReader{},
		contactsReader{},
		notionCSVReader{},
		appleNotesReader{},
		docsReader{},
		chatBatchReader{}, // --kind chat only: it forces the chat batch shape
	}
}
