package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/entitykind"
	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/lazyre"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// The plain reads' shaping: the store returns rows (index.Plain); the read API
// checks the request, resolves its filters, clips and fits the result and
// writes its hints, the same over every store.

// Result shaping bounds.
const (
	// titleMaxChars bounds a title or an entity's surface in a result
	// (characters).
	titleMaxChars = 300
	// maxChunkAttachments bounds the attachments GetChunk lists (the first ones
	// noted); attachmentNameChars and attachmentTypeChars bound their fields.
	maxChunkAttachments                      = 100
	attachmentNameChars, attachmentTypeChars = 255, 100
)

// reChunkID matches a chunk id.
var reChunkID = lazyre.New(`^[0-9a-f]{32}$`)

// GetChunk returns one chunk with its full text, entities and attachments.
func (a *API) GetChunk(ctx context.Context, req abi.ChunkGetRequest) (*abi.ChunkResult, error) {
	id := strings.ToLower(strings.TrimSpace(req.ID))
	if !reChunkID.MatchString(id) {
		return nil, fmt.Errorf("get chunk: id %q is not a chunk id (32 hex characters, as returned in `id` by search, recall or browse): %w", req.ID, abi.ErrInvalid)
	}
	c, err := a.store.Chunk(ctx, id)
	if errors.Is(err, index.ErrEmpty) {
		return nil, fmt.Errorf("get chunk %s: the memory tree is empty (ingest with: openhuman-core ingest PATH...): %w", id, abi.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get chunk %s: %w", id, err)
	}
	if c == nil {
		return nil, fmt.Errorf("get chunk %s: no such chunk; chunk ids come from memory.search, memory.recall or tree.browse results of this store (a re-ingest of a changed source replaces its ids): %w", id, abi.ErrNotFound)
	}
	if len(c.SourceRefs) == 0 {
		c.SourceRefs = nil
	}
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	if len(c.Entities) == 0 {
		c.Entities = nil
	}
	if len(c.Attachments) > maxChunkAttachments {
		c.Attachments = c.Attachments[:maxChunkAttachments]
	}
	for i := range c.Attachments {
		c.Attachments[i].Name = clipRunes(c.Attachments[i].Name, attachmentNameChars)
		c.Attachments[i].ContentType = clipRunes(c.Attachments[i].ContentType, attachmentTypeChars)
	}
	if len(c.Attachments) == 0 {
		c.Attachments = nil
	}
	c.Title = clipRunes(c.Title, titleMaxChars)
	fitChunk(c)
	return &abi.ChunkResult{Chunk: *c}, nil
}

// fitChunk keeps a chunk's JSON under abi.MaxResultBytes: its text is at most a
// chunk's size, so only its lists can outgrow it (a message with thousands of
// attachments, ids of pathological length); they are cut from the end —
// attachments, then entities, then source_refs (source_ref stays).
func fitChunk(c *abi.Chunk) {
	size := fit.ResultBase + fit.StrLen(c.ID) + fit.StrLen(c.SourceKind) + fit.StrLen(c.SourceID) + fit.StrLen(c.SourceRef) +
		fit.StrLen(c.Title) + fit.StrLen(c.Text) + fit.StrsLen(c.SourceRefs) + fit.StrsLen(c.Tags) + fit.StrsLen(c.Entities)
	for _, a := range c.Attachments {
		size += 64 + fit.StrLen(a.Name) + fit.StrLen(a.ContentType)
	}
	for size > abi.MaxResultBytes && len(c.Attachments) > 0 {
		a := c.Attachments[len(c.Attachments)-1]
		size -= 64 + fit.StrLen(a.Name) + fit.StrLen(a.ContentType)
		c.Attachments = c.Attachments[:len(c.Attachments)-1]
	}
	for size > abi.MaxResultBytes && len(c.Entities) > 0 {
		size -= fit.StrLen(c.Entities[len(c.Entities)-1]) + 1
		c.Entities = c.Entities[:len(c.Entities)-1]
	}
	for size > abi.MaxResultBytes && len(c.SourceRefs) > 1 {
		size -= fit.StrLen(c.SourceRefs[len(c.SourceRefs)-1]) + 1
		c.SourceRefs = c.SourceRefs[:len(c.SourceRefs)-1]
	}
	if len(c.Attachments) == 0 {
		c.Attachments = nil
	}
}

// TopEntities lists the most referenced entities (optionally of one kind), by
// reference count, then most recently seen.
func (a *API) TopEntities(ctx context.Context, req abi.EntitiesTopRequest) (*abi.EntitiesResult, error) {
	if err := abi.CheckK("top entities", req.K); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("top entities: offset must be 0..%d, got %d: %w", abi.MaxOffset, req.Offset, abi.ErrInvalid)
	}
	if n := utf8.RuneCountInString(req.Kind); n > abi.MaxKindChars {
		return nil, fmt.Errorf("top entities: kind has %d characters, at most %d are allowed: %w", n, abi.MaxKindChars, abi.ErrInvalid)
	}
	res := &abi.EntitiesResult{Entities: []abi.Entity{}}
	kind, resolved, kindHint := resolveEntityKind(req.Kind)
	ents, total, err := a.store.Entities(ctx, kind, req.K, req.Offset)
	if errors.Is(err, index.ErrEmpty) {
		res.Hint = abi.EmptyHint
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("top entities: %w", err)
	}
	res.Resolved, res.Total = resolved, total
	if kindHint != "" {
		res.Hint = kindHint + "."
	}
	for _, e := range ents {
		e.Surface = clipRunes(e.Surface, titleMaxChars)
		res.Entities = append(res.Entities, e)
	}
	n := fit.Count(res.Entities, fit.ResultBase+fit.StrLen(res.Hint), func(e *abi.Entity) int {
		return 128 + fit.StrLen(e.EntityID) + fit.StrLen(e.Kind) + fit.StrLen(e.Surface)
	})
	had := len(res.Entities)
	res.Entities = res.Entities[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	if res.Total == 0 && kindHint == "" {
		holds, err := a.store.HoldsChunks(ctx)
		if err != nil {
			return nil, fmt.Errorf("check for an empty store: %w", err)
		}
		if !holds {
			res.Hint = abi.EmptyHint
		}
	}
	return res, nil
}

// resolveEntityKind reads tree.top_entities' kind: a stored kind, what people
// call one (resolved), or none the store keeps (resolved to nothing, with a
// hint naming the kinds).
func resolveEntityKind(kind string) (stored string, resolved []abi.Resolution, hint string) {
	kind = strings.ToLower(strings.TrimSpace(kind))
	if kind == "" || entitykind.Known(kind) {
		return kind, nil, ""
	}
	if a := entitykind.Aliases[kind]; a != "" {
		return a, []abi.Resolution{{Filter: "kind", Value: kind, To: []string{a}}}, ""
	}
	return kind, []abi.Resolution{{Filter: "kind", Value: kind, To: []string{}}},
		fmt.Sprintf("kind %q matches no kind of entity; use one of %s (also people, tags, links)", kind, strings.Join(entitykind.Kinds, ", "))
}

// clipRunes cuts s to at most n characters, ending in "…" when cut.
func clipRunes(s string, n int) string {
	t, _ := fit.CutText(s, n)
	return t
}
