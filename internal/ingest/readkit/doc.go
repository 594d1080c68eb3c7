// Package readkit is what every ingest format reader is built on, and imports
// none of them: the reader contract (Reader, Input, Output), the run's report
// (Report, Summary, FileError, the skip reasons, the --report file), text
// decoding (charsets, UTF-7, newlines, control characters, HTML to text:
// text.go, utf7.go, html.go), helpers for JSON exports
// (jsonfiles.go, jsonutil.go), the message a mail reader hands to the threader
// (MailMessage), and the bounds readers keep (file and line sizes, the in-flight
// Budget).
//
// Files are opened through package archive (a member of a mounted zip archive
// reads like a file), which readkit imports and which imports no ingest package.
// The format families (packages mail, chat and notes) import readkit and never
// each other; package ingest imports them all and runs them.
package readkit
