package memtree

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Summary tree shape.
const (
	summaryFanout   = 10
	summaryMaxChars = 1200
)

// summaryNode is one node of a source's extractive summary tree.
type summaryNode struct {
	ID       string
	Level    int
	Idx      int
	Text     string
	Children []string // chunk ids (level 1) or summary ids (level 2+)
	Leaves   []string // every chunk id below the node
	TSStart  int64
	TSEnd    int64
	sents    []string // sentences this node was built from, for the level above
}

func summaryID(sourceID string, level, idx int, children []string) string {
	h := sha256.New()
	h.Write([]byte("summary\x00" + sourceID + "\x00" + strconv.Itoa(level) + "\x00" + strconv.Itoa(idx)))
	for _, c := range children {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

var headerPrefixes = []string{"From:", "To:", "Cc:", "Date:", "Subject:"}

// sentences splits chunk text into sentences, dropping e-mail header lines.
func sentences(text string) []string {
	var out []string
	for _, ln := range strings.Split(text, "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" {
			continue
		}
		hdr := false
		for _, p := range headerPrefixes {
			if strings.HasPrefix(ln, p) {
				hdr = true
				break
			}
		}
		if hdr {
			continue
		}
		start := 0
		for i := 0; i < len(ln); i++ {
			c := ln[i]
			if (c == '.' || c == '!' || c == '?') && (i+1 == len(ln) || ln[i+1] == ' ') {
				if s := strings.TrimSpace(ln[start : i+1]); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
		if s := strings.TrimSpace(ln[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// extract picks the most informative sentences (highest sum of within-source idf of
// their distinct content terms, normalised by a gentle length penalty) up to max
// characters, returned in their original order, after the heading.
func extract(heading string, sents []string, idf map[string]float64, max int, terms *sentTerms) string {
	type scored struct {
		i int
		s float64
	}
	sc := make([]scored, 0, len(sents))
	for i, s := range sents {
		ts := terms.distinct(s)
		var sum float64
		for _, t := range ts {
			sum += idf[t]
		}
		sc = append(sc, scored{i, sum / math.Sqrt(float64(len(ts)+4))})
	}
	sort.SliceStable(sc, func(a, b int) bool { return sc[a].s > sc[b].s })
	budget := max - utf8.RuneCountInString(heading)
	pick := map[int]bool{}
	for _, x := range sc {
		n := utf8.RuneCountInString(sents[x.i]) + 1
		if n > budget {
			continue
		}
		pick[x.i] = true
		budget -= n
	}
	var b strings.Builder
	b.WriteString(heading)
	for i, s := range sents {
		if pick[i] {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// buildSummaries builds a source's summary tree: level 1 over up to summaryFanout
// consecutive chunks, higher levels over up to summaryFanout summaries, until one
// root. Deterministic in the chunks.
func buildSummaries(in *SourceInput, chunks []chunk) []summaryNode {
	if len(chunks) == 0 {
		return nil
	}
	// Within-source sentence document frequencies.
	terms := &sentTerms{bySent: map[string][]string{}}
	chunkSents := make([][]string, len(chunks))
	df := map[string]int{}
	n := 0
	for i, c := range chunks {
		chunkSents[i] = sentences(c.Text)
		for _, s := range chunkSents[i] {
			n++
			for _, t := range terms.distinct(s) {
				df[t]++
			}
		}
	}
	idf := make(map[string]float64, len(df))
	for t, d := range df {
		idf[t] = math.Log(1 + float64(n)/float64(d))
	}
	heading := strings.TrimSpace(in.Title)
	var all []summaryNode
	var level []summaryNode
	for i := 0; i < len(chunks); i += summaryFanout {
		grp := chunks[i:min(i+summaryFanout, len(chunks))]
		node := summaryNode{Level: 1, Idx: len(level), TSStart: grp[0].TSStart, TSEnd: grp[0].TSEnd}
		var sents []string
		for j, c := range grp {
			node.Children = append(node.Children, c.ID)
			node.Leaves = append(node.Leaves, c.ID)
			node.TSStart = min(node.TSStart, c.TSStart)
			node.TSEnd = max(node.TSEnd, c.TSEnd)
			sents = append(sents, chunkSents[i+j]...)
		}
		node.Text = extract(heading, sents, idf, summaryMaxChars, terms)
		node.sents = sentences(node.Text)
		node.ID = summaryID(in.SourceID, 1, node.Idx, node.Children)
		level = append(level, node)
	}
	all = append(all, level...)
	for lv := 2; len(level) > 1; lv++ {
		var next []summaryNode
		for i := 0; i < len(level); i += summaryFanout {
			grp := level[i:min(i+summaryFanout, len(level))]
			node := summaryNode{Level: lv, Idx: len(next), TSStart: grp[0].TSStart, TSEnd: grp[0].TSEnd}
			var sents []string
			for _, c := range grp {
				node.Children = append(node.Children, c.ID)
				node.Leaves = append(node.Leaves, c.Leaves...)
				node.TSStart = min(node.TSStart, c.TSStart)
				node.TSEnd = max(node.TSEnd, c.TSEnd)
				sents = append(sents, c.sents...)
			}
			if heading != "" && len(sents) > 0 && sents[0] == heading {
				sents = sents[1:]
			}
			node.Text = extract(heading, dedupe(sents), idf, summaryMaxChars, terms)
			node.sents = sentences(node.Text)
			node.ID = summaryID(in.SourceID, lv, node.Idx, node.Children)
			next = append(next, node)
		}
		all = append(all, next...)
		level = next
	}
	return all
}

// sentTerms caches the distinct content terms of each sentence of one source: the
// idf pass and every summary level score the same sentences again. The words' stems
// come from the cache all sources share (termCache).
type sentTerms struct {
	bySent map[string][]string // sentence → its distinct content terms, in order of first use
	spare  []string            // unused capacity the next sentence's terms are cut from
}

// distinct returns the distinct content terms of sentence s in the order they first
// occur (the order the scores add them up in). The result is shared: do not modify it.
func (c *sentTerms) distinct(s string) []string {
	if ts, ok := c.bySent[s]; ok {
		return ts
	}
	if cap(c.spare) < 64 {
		c.spare = make([]string, 0, 1024)
	}
	ts := appendDistinctTerms(c.spare[:0], s)
	ts = ts[:len(ts):len(ts)]
	if len(ts) <= cap(c.spare) {
		c.spare = c.spare[len(ts):cap(c.spare)]
	}
	c.bySent[s] = ts
	return ts
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// writeSummaries replaces a source's summary tree with nodes (built by
// buildSummaries, off the writer, in Prepare) and enc (their JSON columns, aligned
// with nodes); hadOld says the source may have an older tree (and its vectors) to
// delete first. New rows join pend.sums, the batch's rows awaiting full-text
// indexing.
func (s *Store) writeSummaries(ctx context.Context, tx *sql.Tx, srcRow int64, nodes []summaryNode, enc []summaryJSON, hadOld bool, pend *pendingWrites) error {
	if hadOld {
		// The delete trigger removes the old rows from the index, which must hold them.
		if err := pend.sync(ctx, s, tx); err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, qDeleteSummaryVectors, srcRow); err != nil {
			return fmt.Errorf("delete old summary vectors: %w", err)
		}
		if _, err := s.txExec(ctx, tx, qDeleteSummaries, srcRow); err != nil {
			return fmt.Errorf("delete old summaries: %w", err)
		}
	}
	ins := s.txStmt(ctx, tx, s.ws.insSummary)
	for i, n := range nodes {
		var rid int64
		if err := ins.QueryRowContext(ctx, n.ID, srcRow, n.Level, n.Idx, n.Text, enc[i].children, enc[i].leaves, n.TSStart, n.TSEnd).Scan(&rid); err != nil {
			return fmt.Errorf("write summary L%d #%d: %w", n.Level, n.Idx, err)
		}
		pend.sums = append(pend.sums, rid)
	}
	return nil
}
