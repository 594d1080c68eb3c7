// Package notes reads documents and notes: Markdown, plain text and Org files with
// their front matter and dates (docs.go, notes.go; Joplin, TextBundle, Obsidian
// and Notion exports among them), Evernote .enex (enex.go), Notion database CSV
// (notioncsv.go), Google Keep, Day One and Roam (notesapps.go), and address books
// (vCard, contacts CSV: contacts.go), whose people are kept as contacts, not
// documents. Each document is one source whose id is its path; parsing one runs
// under a per-file time budget (parsebudget.go).
package notes
