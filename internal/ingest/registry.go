package ingest

// readers lists the format readers in the order the runner asks them whether they
// recognise a file or folder: folder formats first, then the JSON exports whose
// shapes are most specific, then mail, then text. A reader that claims a path stops
// the search, so the order settles overlaps (a WhatsApp export is a .txt file).
func readers() []reader {
	return []reader{
		slackReader{},
		maildirReader{},
		jsonReader{},
		mboxReader{},
		emlReader{},
		chatBatchReader{}, // --kind chat only: it forces the chat batch shape
	}
}
