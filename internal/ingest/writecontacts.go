package ingest

import (
	"context"
	"errors"

	"github.com/openhuman/openhuman-core/internal/ingest/notes"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
	"github.com/openhuman/openhuman-core/internal/memtree"
)

// contactFile is one address book read in a run.
type contactFile struct {
	path string
	cs   []memtree.ContactInput
}

// contacts keeps an address book's people for the end of the run.
func (r *runner) Contacts(path string, cs []memtree.ContactInput) {
	r.yield[r.arg]++
	if r.cur >= 0 {
		r.sum.ReadFiles[r.cur].Yield += len(cs)
	}
	r.contactFiles = append(r.contactFiles, contactFile{path: path, cs: cs})
}

// writeContacts writes the run's address books, after its sources: a contact
// names the person whose messages are stored under its names and addresses.
func (r *runner) writeContacts(ctx context.Context) {
	if len(r.contactFiles) == 0 {
		return
	}
	cw, ok := r.w.(notes.ContactWriter)
	for _, f := range r.contactFiles {
		if !ok {
			r.rep.Fail(readkit.FileError{Path: f.path, Err: errors.New("this store cannot keep contacts: not ingested")})
			continue
		}
		n, err := cw.PutContacts(ctx, f.cs)
		if err != nil {
			r.rep.Fail(readkit.FileError{Path: f.path, Err: err})
			continue
		}
		r.rep.Mu.Lock()
		r.sum.Contacts += n
		r.rep.Mu.Unlock()
	}
}
