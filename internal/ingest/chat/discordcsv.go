package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// DiscordChatExporter's CSV export: a header "AuthorID,Author,Date,Content,
// Attachments,Reactions", every field quoted, one row a message. Date is in the
// format the export was asked for: the culture's short date and time ("1/5/2026
// 10:00 AM", "05.01.2026 10:00"), its old default "05-Jan-26 10:00 AM", a long
// date ("Monday, January 5, 2026 10:00 AM"), ISO 8601, or "unix"/"unixms"
// numbers; a file's dates are read together with the WhatsApp reader's
// inference (which number is the day, which words are AM/PM). Attachments are
// URLs or paths, comma-separated. The channel id comes from the file name
// DiscordChatExporter gives ("Guild - Channel [1234].csv").

// dcCSVHeader reports whether a CSV's first line is DiscordChatExporter's.
func dcCSVHeader(head []byte) bool {
	first, _, _ := bytes.Cut(readkit.TrimUTF8BOM(head), []byte{'\n'})
	h := strings.ReplaceAll(strings.TrimSpace(string(first)), `"`, "")
	return strings.HasPrefix(h, "AuthorID,Author,Date,Content")
}

var reDCChannelID = lazyre.New(`\[(\d{5,})\]`)

// dcWeekday drops a leading weekday name and comma ("Monday, ").
var dcWeekday = lazyre.New(`^\p{L}+\.?, `)

// dcReadCSV reads a DiscordChatExporter CSV export.
func dcReadCSV(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	r, ok := readkit.OpenCSV(path, rep)
	if !ok {
		return
	}
	if _, err := r.Read(); err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("DiscordChatExporter CSV header: %w", err)})
		return
	}
	type row struct {
		line             int
		id, author, date string
		content, atts    string
	}
	var rows []row
	if !readkit.CSVRows(ctx, r, path, rep, func(n int, rec []string) {
		for len(rec) < 6 {
			rec = append(rec, "")
		}
		rows = append(rows, row{line: n, id: rec[0], author: rec[1], date: strings.TrimSpace(rec[2]), content: rec[3], atts: rec[4]})
	}) {
		return
	}
	dates := make([]string, len(rows))
	for i, rw := range rows {
		dates[i] = rw.date
	}
	times, errs, notes := localeTimes(dates)
	for _, n := range notes {
		rep.Warn(path, "", n)
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	chanID := base
	if m := reDCChannelID.FindStringSubmatch(base); m != nil {
		chanID = m[1]
	}
	title := strings.TrimSpace(reDCChannelID.ReplaceAllString(base, ""))
	var res []memtree.MessageInput
	perMS := map[int64]int{}
	for i, rw := range rows {
		if errs[i] != nil {
			rep.Fail(readkit.FileError{Path: path, Where: fmt.Sprintf("row %d", rw.line), Err: fmt.Errorf("date %q: %w: message not ingested", rw.date, errs[i])})
			continue
		}
		mi := memtree.MessageInput{Author: readkit.CleanText(rw.author), AuthorAddr: readkit.CleanText(rw.author), TimestampMS: times[i], Text: readkit.CleanText(rw.content)}
		if a, _, ok := strings.Cut(mi.Author, "#"); ok && a != "" {
			mi.Author = a // "name#1234": the address keeps the discriminator
		}
		for _, u := range strings.Split(rw.atts, ",") {
			if name := readkit.ExportFileName(dcURLBase(strings.TrimSpace(u))); name != "" {
				mi.Attachments = append(mi.Attachments, readkit.AttachmentOf(name, readkit.MimeType(name, ""), 0))
				if mi.Text == "" {
					mi.Text = "[attachment " + name + "]"
				}
			}
		}
		if mi.Text == "" {
			continue
		}
		k := perMS[mi.TimestampMS]
		perMS[mi.TimestampMS]++
		mi.Ref = fmt.Sprintf("discord:%s:%s@%d:%d", chanID, strings.TrimSpace(rw.id), mi.TimestampMS, k)
		res = append(res, mi)
	}
	if len(res) == 0 {
		return
	}
	readkit.WriteChat(out, path, "discord", "0/"+chanID, title, res)
}

// localeTimes reads a file's timestamps written in one locale's layout: ISO
// 8601, epoch seconds or milliseconds, or dates and times as people write
// them, whose layout (the order of day and month, the AM/PM words) is inferred
// from all of them as WhatsApp's are (waResolve). Times without a zone are
// local wall times; notes say what was guessed.
func localeTimes(dates []string) (ms []int64, errs []error, notes []string) {
	ms, errs = make([]int64, len(dates)), make([]error, len(dates))
	var heads []waHead
	idx := make([]int, len(dates))
	var buf waBuf
	for i, d := range dates {
		idx[i] = -1
		if t, err := time.Parse(time.RFC3339Nano, d); err == nil {
			ms[i] = t.UnixMilli()
			continue
		}
		if n, err := strconv.ParseInt(d, 10, 64); err == nil {
			if n < 1e11 {
				n *= 1000 // seconds
			}
			ms[i] = n
			continue
		}
		d = dcWeekday.ReplaceAllString(d, "")
		st, ok, _ := waParse("["+d+"] x: y", &buf)
		if !ok {
			errs[i] = errors.New("not a date and time this reader knows")
			continue
		}
		idx[i] = len(heads)
		heads = append(heads, waHead{st: st, ok: true})
	}
	if len(heads) > 0 {
		lay := waResolve(heads)
		if lay.guessed != "" {
			notes = append(notes, "no date shows whether the day or the month comes first: guessed "+lay.guessed)
		}
		if len(lay.unknownMarks) > 0 {
			notes = append(notes, fmt.Sprintf("word(s) %q next to the times are no known AM/PM words: times read as a 24-hour clock", lay.unknownMarks))
		}
		notes = append(notes, "times read as local time of this machine ("+tgLocalZone()+"): the dates carry no zone")
		for i := range dates {
			if idx[i] >= 0 {
				ms[i], errs[i] = waTime(&heads[idx[i]].st, &lay)
			}
		}
	}
	for i := range dates {
		if errs[i] == nil && !readkit.ChatTimeOK(ms[i]) {
			errs[i] = errors.New("before 1980 or after 2200")
		}
	}
	return ms, errs, notes
}
