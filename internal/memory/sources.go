package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/openhuman/openhuman-core/internal/fit"
	"github.com/openhuman/openhuman-core/internal/retrieval/index"
	"github.com/openhuman/openhuman-core/internal/sourcekind"
	"github.com/openhuman/openhuman-core/sdk/abi"
)

// coldPageDepth is how deep (offset + k) a page is read through the store's
// page read (index.Plain's SourcePage) while the source list of the store's
// generation is not named for the request's hint; deeper pages and
// display-name queries read and name the whole list.
const coldPageDepth = 1000

// namedHints bounds how many user e-mail hints' named lists are kept.
const namedHints = 16

// namedSource is a source with its display name for one user e-mail hint, and
// that name folded for the display-name query.
type namedSource struct {
	abi.Source
	fold string
}

// namedLists keeps, per user e-mail hint, the store's source list of one
// generation with display names set.
type namedLists struct {
	mu    sync.Mutex
	gen   string
	lists map[string][]namedSource
}

// ListSources lists one page of the ingested sources, most recent first, with
// their display names: those of the kinds asked (all when none) whose display
// name contains the query (case-insensitive; all when empty). Total counts them
// all; Next is the offset of the following page. K 0 means abi.MaxK.
//
// The store reads its sources once per generation (every ingest commit makes
// one), newest first; the API names them per hint and keeps the lists, so
// another process's ingest is seen on the next call and a page costs a slice (a
// scan of the names with kinds or a query), not a query.
func (a *API) ListSources(ctx context.Context, req abi.SourcesListRequest) (*abi.SourcesResult, error) {
	k := req.K
	if k == 0 {
		k = abi.MaxK
	}
	if err := abi.CheckK("list sources", k); err != nil {
		return nil, err
	}
	if req.Offset < 0 || req.Offset > abi.MaxOffset {
		return nil, fmt.Errorf("list sources: offset must be 0..%d, got %d: %w", abi.MaxOffset, req.Offset, abi.ErrInvalid)
	}
	if err := abi.CheckFilter("list sources", "kinds", req.Kinds, abi.MaxKindChars); err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(req.Query); n > abi.MaxQueryChars {
		return nil, fmt.Errorf("list sources: query has %d characters, at most %d are allowed: %w", n, abi.MaxQueryChars, abi.ErrInvalid)
	}
	if n := utf8.RuneCountInString(req.UserEmailHint); n > abi.MaxIDChars {
		return nil, fmt.Errorf("list sources: user_email_hint has %d characters, at most %d are allowed: %w", n, abi.MaxIDChars, abi.ErrInvalid)
	}
	res := &abi.SourcesResult{Sources: []abi.Source{}}
	gen, err := a.store.Generation(ctx)
	if errors.Is(err, index.ErrEmpty) {
		res.Hint = abi.EmptyHint
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	if req.Group != "" && req.Group != abi.GroupMonth && req.Group != abi.GroupConversation {
		return nil, fmt.Errorf("list sources: group must be %q or %q, got %q: %w", abi.GroupMonth, abi.GroupConversation, clipRunes(req.Group, 32), abi.ErrInvalid)
	}
	// Kinds people type: aliases and chat platforms.
	kf := sourcekind.Resolve("kinds", req.Kinds)
	res.Resolved = kf.Resolved
	grouped := req.Group == abi.GroupConversation
	simple := len(kf.Platforms) == 0 && !kf.None && !grouped
	kinds := map[string]bool{}
	for _, kd := range kf.Kinds {
		kinds[kd] = true
	}
	q := strings.ToLower(strings.TrimSpace(req.Query))
	var page []namedSource
	if simple && q == "" && req.Offset+k <= coldPageDepth && !a.sources.has(gen, req.UserEmailHint) {
		// A first page after the store changed: read it through the store's page
		// read instead of loading every source (130–260 ms at 68k sources).
		var want []string
		for kd := range kinds {
			want = append(want, kd)
		}
		rows, total, err := a.store.SourcePage(ctx, want, k, req.Offset)
		if err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		res.Total = total
		for _, src := range rows {
			src.DisplayName = DisplayName(src.SourceKind, src.SourceID, src.Title, req.UserEmailHint)
			page = append(page, namedSource{Source: src})
		}
	} else {
		all, err := a.namedSources(ctx, req.UserEmailHint)
		if err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		if grouped {
			all = groupByConversation(all)
		}
		if simple && len(kinds) == 0 && q == "" {
			res.Total = len(all)
			if req.Offset < len(all) {
				page = all[req.Offset:min(len(all), req.Offset+k)]
			}
		} else {
			one := "" // the kind when one is asked: compared without a map lookup
			if len(kinds) == 1 {
				for kd := range kinds {
					one = kd
				}
			}
			for i := range all {
				src := &all[i]
				if !simple && !kf.Admits(src.SourceKind, src.SourceID) ||
					simple && (one != "" && src.SourceKind != one || one == "" && len(kinds) > 0 && !kinds[src.SourceKind]) ||
					q != "" && !strings.Contains(src.fold, q) {
					continue
				}
				if res.Total >= req.Offset && len(page) < k {
					page = append(page, *src)
				}
				res.Total++
			}
		}
	}
	if res.Total == 0 {
		holds, err := a.store.HoldsChunks(ctx)
		if err != nil {
			return nil, fmt.Errorf("check for an empty store: %w", err)
		}
		if !holds {
			res.Hint = abi.EmptyHint
		}
		if res.Hint == "" && q != "" {
			kf.Hints = append(kf.Hints, fmt.Sprintf("query %q matches no source's name or title; call tree.list_sources without it to see them", clipRunes(req.Query, 64)))
		}
	}
	res.Hint = abi.WithHints(res.Hint, kf.Hints)
	res.Sources = make([]abi.Source, len(page))
	for i, p := range page {
		src := p.Source
		src.Title = clipRunes(src.Title, titleMaxChars)
		src.DisplayName = clipRunes(src.DisplayName, titleMaxChars)
		res.Sources[i] = src
	}
	n := fit.Count(res.Sources, fit.ResultBase+fit.StrLen(res.Hint), func(src *abi.Source) int {
		return 160 + fit.StrLen(src.SourceKind) + fit.StrLen(src.SourceID) + fit.StrLen(src.DisplayName) + fit.StrLen(src.Title) + 10*len(src.Months)
	})
	had := len(res.Sources)
	res.Sources = res.Sources[:n]
	res.Next = fit.NextOffset(req.Offset, n, had, res.Total)
	return res, nil
}

// has reports whether the list of generation gen is named for hint.
func (l *namedLists) has(gen, hint string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.lists[hint]
	return ok && l.gen == gen
}

// namedSources returns the store's sources, newest first, with display names for
// userEmailHint; the lists of the last few hints are kept per store generation.
// The slice is shared: callers must not modify it.
func (a *API) namedSources(ctx context.Context, userEmailHint string) ([]namedSource, error) {
	rows, gen, err := a.store.Sources(ctx)
	if err != nil {
		return nil, err
	}
	l := &a.sources
	l.mu.Lock()
	named, ok := l.lists[userEmailHint]
	ok = ok && l.gen == gen
	l.mu.Unlock()
	if ok {
		return named, nil
	}
	named = make([]namedSource, len(rows))
	for i, src := range rows {
		src.DisplayName = DisplayName(src.SourceKind, src.SourceID, src.Title, userEmailHint)
		// The query also finds a chat by its title: the Telegram group's name, the
		// Slack channel's (a chat's display name is its id).
		fold := strings.ToLower(src.DisplayName)
		if src.SourceKind == abi.KindChat && src.Title != "" {
			fold += "\x00" + strings.ToLower(src.Title)
		}
		named[i] = namedSource{Source: src, fold: fold}
	}
	l.mu.Lock()
	if l.gen != gen || len(l.lists) >= namedHints {
		l.gen, l.lists = gen, map[string][]namedSource{}
	}
	l.lists[userEmailHint] = named
	l.mu.Unlock()
	return named, nil
}

// DisplayName applies reference-behaviour §2.6 to a source id: drop everything up to
// the first ':'; a '|'-joined participant list drops the parts equal to the user's
// address hint (joined with ", " when something was removed and something remains),
// else is joined with " ↔ ". A non-empty title names threads and documents better
// than their id, so it wins for those (not for participant lists or chat channels).
func DisplayName(kind, sourceID, title, userEmailHint string) string {
	rest := sourceID
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.Contains(rest, "|") {
		parts := strings.Split(rest, "|")
		hint := strings.TrimSpace(userEmailHint)
		if hint != "" {
			var kept []string
			for _, p := range parts {
				if !strings.EqualFold(strings.TrimSpace(p), hint) {
					kept = append(kept, p)
				}
			}
			if len(kept) < len(parts) && len(kept) > 0 {
				return strings.Join(kept, ", ")
			}
		}
		return strings.Join(parts, " ↔ ")
	}
	if t := strings.TrimSpace(title); t != "" && kind != abi.KindChat {
		return t
	}
	return rest
}

// groupByConversation folds the months of each chat conversation into one row
// (SourceID the conversation, Months newest first); other sources stay as they
// are. Order: the rows' first appearance in list (most recent first).
func groupByConversation(list []namedSource) []namedSource {
	out := make([]namedSource, 0, len(list))
	at := map[string]int{}
	for _, src := range list {
		conv, month, ok := sourcekind.Conversation(src.SourceID)
		if src.SourceKind != abi.KindChat || !ok {
			out = append(out, src)
			continue
		}
		if i, seen := at[conv]; seen {
			g := &out[i]
			g.ChunkCount += src.ChunkCount
			g.FirstMS = min(g.FirstMS, src.FirstMS)
			g.MostRecentMS = max(g.MostRecentMS, src.MostRecentMS)
			if month != "" {
				g.Months = append(g.Months, month)
			}
			continue
		}
		g := src
		g.SourceID = conv
		g.Title = conversationTitle(src.Title, month)
		g.DisplayName = conversationTitle(src.DisplayName, month)
		g.Months = nil
		if month != "" {
			g.Months = []string{month}
		}
		at[conv] = len(out)
		out = append(out, g)
	}
	for i := range out {
		if len(out[i].Months) > 1 {
			sort.Sort(sort.Reverse(sort.StringSlice(out[i].Months)))
		}
	}
	return out
}

// conversationTitle drops a month suffix (" (2026-01)" or "/2026-01") from a
// chat source's title or display name.
func conversationTitle(t, month string) string {
	if month == "" {
		return t
	}
	t = strings.TrimSuffix(t, " ("+month+")")
	return strings.TrimSuffix(t, "/"+month)
}
