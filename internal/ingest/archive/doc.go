// Package archive is the file system every ingest reader opens its files
// through: a file on disk, or a member of a zip archive mounted in place (Mount),
// which reads like a file: "export.zip/channels.json". It checks an archive
// before mounting it (Limits: member count, paths that leave the archive, zip
// bombs), never unpacks one to disk, and names what it refuses.
//
// It imports no other ingest package: readkit (the readers' shared kit) and
// the format families (mail, chat, notes) open files through it, and package
// ingest mounts the archives its walk meets.
package archive
