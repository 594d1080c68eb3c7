// Package mail reads mail: mbox files, single messages (.eml and other RFC 5322
// files, Apple Mail .emlx) and Maildir folders. It parses each message (headers,
// MIME, charsets, dates: mail.go, mailhdr.go, mbox.go), cleans its body of quoted
// history, signatures and footers (clean.go), and threads the messages of a whole
// run across files (Threader: thread.go), spilling them to an unlinked temporary
// file (spill.go) so that memory stays bounded.
//
// The readers are mailreaders.go (mbox, eml, Maildir) and emlx.go; they hand each
// parsed message to readkit.Output.Mail, and package ingest threads them.
package mail
