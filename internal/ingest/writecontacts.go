package ingest

import (
	"context"
	"errors"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// contactFile is one address book read in a run.
type contactFile struct {
	path string
	cs   []memtree.ContactInput
}

// Contacts keeps an address book's people for the end of the run.
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
	cw, ok := r.w.(ContactWriter)
	for _, f := range r.contactFiles {
		if !ok {
			r.rep.Fail(FileError{Path: f.path, Err: errors.New("this store cannot keep contacts: not ingested")})
			continue
		}
		n, err := cw.PutContacts(ctx, f.cs)
		if err != nil {
			r.rep.Fail(FileError{Path: f.path, Err: err})
			continue
		}
		r.rep.Mu.Lock()
		r.sum.Contacts += n
		r.rep.Mu.Unlock()
	}
}

// ContactWriter is a Writer that keeps contacts as people (memtree.PutContacts);
// *memtree.Store implements it. A run whose writer does not names every contact
// file as failed.
type ContactWriter interface {
	PutContacts(ctx context.Context, cs []memtree.ContactInput) (int, error)
}
