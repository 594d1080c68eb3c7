package notes

import (
	"context"
	"fmt"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// Per-file time budget for parsing a document's text (issue 39, build point
// 2): every parser here is meant to be linear, but a shape nobody foresaw
// (finding 3 was an unclosed TOML array: 500 KB took 37 s, 2 MB ten minutes)
// must not hold the whole ingest. A document whose parse outlives the budget
// is named as skipped with the reason and ingest goes on. Go cannot stop the
// parse itself: it finishes in the background, its result dropped, and at
// most maxOverBudget such parses run at once — a further parse waits for one
// of them to end before it starts, so a folder of hostile files costs at most
// that many cores.
var (
	// DocParseBudget is generous: the largest real documents (64 MiB, the
	// per-document bound) parse in well under a second.
	DocParseBudget = 30 * time.Second
	// OverBudget holds a slot per parse still running past its budget.
	OverBudget = make(chan struct{}, maxOverBudget)
)

const maxOverBudget = 2

// ReasonParseBudget is the skip reason of a document over the budget.
func ReasonParseBudget(budget time.Duration) string {
	return fmt.Sprintf("parsing took longer than %s (the per-file time budget): not ingested; its front matter or markup has a shape this reader cannot read in linear time (please report it)", budget)
}

// errParseBudget marks a parse that ran out of its budget.
var errParseBudget = fmt.Errorf("parse over its time budget")

// parseWithinBudget runs parseDocumentAt under DocParseBudget (and ctx).
func parseWithinBudget(ctx context.Context, text, rel string, mtime, exportDate time.Time) (*memtree.SourceInput, error) {
	type result struct {
		src *memtree.SourceInput
		err error
	}
	// Wait for room if earlier parses still run past their budgets.
	select {
	case OverBudget <- struct{}{}:
		<-OverBudget
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	done := make(chan result, 1)
	slot := make(chan struct{}) // closed when this parse no longer needs its slot
	go func() {
		src, err := parseDocumentAt(text, rel, mtime, exportDate)
		done <- result{src, err}
		close(slot)
	}()
	timer := time.NewTimer(DocParseBudget)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.src, r.err
	case <-timer.C:
	case <-ctx.Done():
	}
	// Over budget (or cancelled): the parse keeps a slot until it ends.
	select {
	case OverBudget <- struct{}{}:
		go func() { <-slot; <-OverBudget }()
	case <-slot: // it ended while this waited for a slot: its result stands
		if ctx.Err() == nil {
			r := <-done
			return r.src, r.err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errParseBudget
}
