package notes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/ingest/archive"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// KindNotionCSV forces the Notion database CSV reader.
const KindNotionCSV = "notioncsv"

// NotionCSVReader reads the CSV tables of a Notion export's databases
// ("Tasks 1a2b…(32 hex).csv", and its "_all.csv" twin): each row is a page, its
// first column the title, its "Created"/"Created time"/"Date" column the time,
// "Tags" its tags, the other columns "Name: value" lines. When the export also
// holds the pages themselves (the folder of the same name beside the table,
// read by the document reader), the table is named as skipped instead: the
// pages are already read. A table without any row is named as empty.
type NotionCSVReader struct{}

func (NotionCSVReader) Kind() string { return KindNotionCSV }

// ReasonNotionTable is the skip reason of a database table whose pages are
// exported beside it.
const ReasonNotionTable = "Notion database table: its pages are read from the folder of the same name beside it"

// notionCSVBase is a Notion table's name without "_all" and its id.
func notionCSVBase(p string) (base string, ok bool) {
	b := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
	b = strings.TrimSuffix(b, "_all")
	if !reNotionName.MatchString(b) {
		return "", false
	}
	return b, true
}

func (NotionCSVReader) Detect(p string, dir bool, head []byte) bool {
	if dir || !strings.EqualFold(filepath.Ext(p), ".csv") {
		return false
	}
	_, ok := notionCSVBase(p)
	return ok && readkit.IsText(head)
}

func (NotionCSVReader) Read(ctx context.Context, in readkit.Input, out readkit.Output, rep *readkit.Report) {
	path := in.Path
	base, _ := notionCSVBase(path)
	if st, err := archive.Stat(filepath.Join(filepath.Dir(path), base)); err == nil && st.IsDir() {
		rep.Skip(path, ReasonNotionTable)
		return
	}
	r, ok := readkit.OpenCSV(path, rep)
	if !ok {
		return
	}
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		rep.Warn(path, "", "empty table: nothing to ingest")
		return
	}
	if err != nil {
		rep.Fail(readkit.FileError{Path: path, Err: fmt.Errorf("Notion table header: %w", err)})
		return
	}
	table := strings.TrimSpace(reNotionName.ReplaceAllString(base, ""))
	mtime, _ := docFileTime(path, time.Now())
	rows := 0
	if !readkit.CSVRows(ctx, r, path, rep, func(n int, rec []string) {
		title := ""
		if len(rec) > 0 {
			title = strings.TrimSpace(rec[0])
		}
		var lines, tags []string
		var when time.Time
		for i := 1; i < len(rec) && i < len(header); i++ {
			k, v := strings.TrimSpace(strings.TrimPrefix(header[i], "\ufeff")), strings.TrimSpace(rec[i])
			if v == "" {
				continue
			}
			switch strings.ToLower(k) {
			case "created", "created time", "date created", "created at", "created on":
				if d, ok := parseNotionDate(v); ok {
					when = d
				}
			case "date":
				if d, ok := parseNotionDate(v); ok && when.IsZero() {
					when = d
				}
			case "tags", "labels", "multi-select":
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" {
						tags = append(tags, t)
					}
				}
			}
			lines = append(lines, k+": "+v)
		}
		if title == "" && len(lines) == 0 {
			return
		}
		if title == "" {
			title = fmt.Sprintf("%s row %d", table, n-1)
		}
		ts := when
		if ts.IsZero() || ts.Before(plausibleFileTime) {
			ts = mtime
		}
		rows++
		text := strings.TrimSpace(title + "\n" + strings.Join(lines, "\n"))
		out.Source(memtree.SourceInput{
			Kind: memtree.KindDocument, SourceID: fmt.Sprintf("%s#%d", DocSourceID(path), n-1), Title: title, Provider: "notion", Tags: tags,
			Origin:   fmt.Sprintf("%s row %d", path, n),
			Messages: []memtree.MessageInput{{Ref: fmt.Sprintf("%s#%d", in.Rel, n-1), Subject: title, TimestampMS: ts.UnixMilli(), Text: text + "\n"}},
		})
	}) {
		return
	}
	if rows == 0 {
		rep.Warn(path, "", "table without rows: nothing to ingest")
	}
}
