// Package abi defines the wire format of the "openhuman/1" tool ABI: the JSON that
// the host passes to a tool module's oh_call export, the JSON a module passes to the
// host functions it was granted, and the result shapes those calls return.
//
// It is plain Go with no dependencies, so the host (runtime, memory tree, servers),
// first-party guests and third-party authors all share one definition.
package abi

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Version is the ABI identifier written in a module manifest's `abi` key.
const Version = "openhuman/1"

// ExtismVersion is the manifest `abi` of modules built with an Extism PDK.
const ExtismVersion = "extism/1"

// HostModule is the import module name under which host functions are linked.
const HostModule = "openhuman"

// ExtismHostModule is the import module under which Extism guests see the same host functions.
const ExtismHostModule = "extism:host/user"

// Capability names a set of host functions a module may be granted.
const (
	CapMemoryRead = "memory.read"
	CapWebSearXNG = "web.searxng"
)

// Host function names.
const (
	FnMemorySearch  = "memory_search"
	FnMemoryRecall  = "memory_recall"
	FnChunkGet      = "chunk_get"
	FnChunksList    = "chunks_list"
	FnEntitiesTop   = "entities_top"
	FnSourcesList   = "sources_list"
	FnSearxngSearch = "searxng_search"
	FnLog           = "log"
)

// Guest exports.
const (
	ExportAlloc      = "oh_alloc"
	ExportCall       = "oh_call"
	ExportInitialize = "_initialize"
	ExportMemory     = "memory"
)

// CapabilityFunctions lists the host functions each capability links. The `log`
// function is always linked and belongs to no capability.
var CapabilityFunctions = map[string][]string{
	CapMemoryRead: {FnMemorySearch, FnMemoryRecall, FnChunkGet, FnChunksList, FnEntitiesTop, FnSourcesList},
	CapWebSearXNG: {FnSearxngSearch},
}

// CapabilityOf returns the capability that provides host function fn, or "" when fn
// belongs to none (including `log`, which every module may link).
func CapabilityOf(fn string) string {
	for c, fns := range CapabilityFunctions {
		for _, f := range fns {
			if f == fn {
				return c
			}
		}
	}
	return ""
}

// Log levels for the `log` host function.
const (
	LogDebug int32 = 0
	LogInfo  int32 = 1
	LogWarn  int32 = 2
	LogError int32 = 3
)

// EmptyHint is a read result's hint while the store holds nothing.
const EmptyHint = "The memory tree is empty. Ingest mail, chat or documents with: openhuman-core ingest PATH..."

// Source kinds: a hit's, chunk's or source's source_kind.
const (
	KindEmail    = "email"
	KindChat     = "chat"
	KindDocument = "document"
)

// CheckK reports a read's k (page size) outside 1..MaxK, wrapping ErrInvalid.
func CheckK(op string, k int) error {
	if k < 1 || k > MaxK {
		return fmt.Errorf("%s: k must be between 1 and %d, got %d: %w", op, MaxK, k, ErrInvalid)
	}
	return nil
}

// CheckFilter reports an array filter with more than MaxFilterItems values or a
// value longer than maxChars characters, wrapping ErrInvalid.
func CheckFilter(op, name string, vals []string, maxChars int) error {
	if len(vals) > MaxFilterItems {
		return fmt.Errorf("%s: %s has %d values, at most %d are allowed; narrow the listing in several calls: %w", op, name, len(vals), MaxFilterItems, ErrInvalid)
	}
	for _, v := range vals {
		if n := utf8.RuneCountInString(v); n > maxChars {
			return fmt.Errorf("%s: a value of %s has %d characters, at most %d are allowed: %w", op, name, n, maxChars, ErrInvalid)
		}
	}
	return nil
}

// WithHints appends hints, each ended by a full stop, to a result's hint.
func WithHints(hint string, hints []string) string {
	all := hint
	for _, h := range hints {
		if all != "" {
			all += " "
		}
		all += h + "."
	}
	return all
}

// Error codes carried in Error.Code.
const (
	CodeInvalidParams = "invalid_params"
	CodeNotFound      = "not_found"
	CodeUnavailable   = "unavailable"
	CodeInternal      = "internal"
)

// Error is a failure reported by a tool (in CallResponse) or by a host function (in HostReply).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// The errors a read API returns (wrapped, with what is wrong and where) for the
// host to answer with CodeNotFound and CodeInvalidParams: the store and the host
// agree on them here, so that neither imports the other.
var (
	// ErrNotFound: no item has the requested id (e.g. a chunk id).
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request is malformed (e.g. k out of range).
	ErrInvalid = errors.New("invalid request")
)

// CallRequest is the JSON the host writes into guest memory before calling oh_call.
type CallRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Client    string          `json:"client"`
	RequestID string          `json:"request_id"`
}

// CallResponse is the JSON oh_call returns: exactly one of Result or Error.
type CallResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// HostReply is the JSON every host function returns: exactly one of OK or Error.
type HostReply struct {
	OK    json.RawMessage `json:"ok,omitempty"`
	Error *Error          `json:"error,omitempty"`
}

// SearchRequest is the argument of memory_search.
type SearchRequest struct {
	Query string `json:"query"`
	K     int    `json:"k"`
}

// RecallRequest is the argument of memory_recall.
type RecallRequest struct {
	Query string `json:"query"`
	K     int    `json:"k"`
}

// ChunkGetRequest is the argument of chunk_get.
type ChunkGetRequest struct {
	ID string `json:"id"`
}

// ChunksListRequest is the argument of chunks_list. Filters are AND-combined; empty
// slices and nil pointers mean "no filter".
type ChunksListRequest struct {
	SourceKinds []string `json:"source_kinds,omitempty"`
	SourceIDs   []string `json:"source_ids,omitempty"`
	EntityIDs   []string `json:"entity_ids,omitempty"`
	SinceMS     *int64   `json:"since_ms,omitempty"`
	UntilMS     *int64   `json:"until_ms,omitempty"`
	Query       string   `json:"query,omitempty"`
	K           int      `json:"k"`
	Offset      int      `json:"offset,omitempty"`
}

// EntitiesTopRequest is the argument of entities_top.
type EntitiesTopRequest struct {
	Kind   string `json:"kind,omitempty"`
	K      int    `json:"k"`
	Offset int    `json:"offset,omitempty"`
}

// SourcesListRequest is the argument of sources_list: one page of the sources, most
// recent first. K 0 means MaxK (a module built before paging sends none).
type SourcesListRequest struct {
	UserEmailHint string `json:"user_email_hint,omitempty"`
	// Kinds keeps sources of these kinds only (chat, email, document); empty = all.
	Kinds []string `json:"kinds,omitempty"`
	// Query keeps sources whose display name contains it (case-insensitive).
	Query string `json:"query,omitempty"`
	// Group is "" or GroupMonth (one row per source: a chat conversation has
	// one per month) or GroupConversation (one row per chat conversation, with
	// its months).
	Group  string `json:"group,omitempty"`
	K      int    `json:"k,omitempty"`
	Offset int    `json:"offset,omitempty"`
}

// Bounds of the read requests and results, shared by the host's read API, the
// first-party tools' argument checks and their input schemas (maxItems, maxLength).
const (
	// MaxK is the largest k (page size) of every read.
	MaxK = 50
	// MaxOffset is the deepest offset a paged read accepts.
	MaxOffset = 1_000_000
	// MaxFilterItems is the most values an array filter (source_kinds, source_ids,
	// entity_ids, kinds) may hold.
	MaxFilterItems = 100
	// MaxQueryChars is the longest query (characters) a read accepts.
	MaxQueryChars = 1000
	// MaxIDChars is the longest source or entity id (characters) a filter accepts.
	MaxIDChars = 4096
	// MaxKindChars is the longest kind name a filter accepts.
	MaxKindChars = 32
	// MaxResultBytes is the budget of one read result's JSON: each read keeps its
	// result under it by construction (bounded fields, then fewer items and a
	// `next`/`omitted` that says so), below the runtime's 1 MiB result cap with
	// room for the {"result":…} envelope.
	MaxResultBytes = 960 << 10
	// MaxHitMessages is the most cited messages a search or recall hit carries in
	// Messages (its source_refs may cite more).
	MaxHitMessages = 10
	// HitMessageMaxChars and HitMessageMinChars bound the text of one cited
	// message; the bound a result applies (its MessageTextMaxChars) is
	// HitMessageBudgetChars shared among the result's messages, within them.
	HitMessageMaxChars    = 800
	HitMessageMinChars    = 100
	HitMessageBudgetChars = 40000
)

// SearxngRequest is the argument of searxng_search. Categories are already
// normalised (general, news, images). The host builds the URL; the guest never does.
type SearxngRequest struct {
	Query      string   `json:"query"`
	Categories []string `json:"categories,omitempty"`
	Language   string   `json:"language,omitempty"`
	MaxResults int      `json:"max_results,omitempty"`
}

// SearxngReply is what searxng_search returns: the raw response body, which the
// guest parses (untrusted web data is parsed inside the sandbox).
type SearxngReply struct {
	Status int `json:"status"`
	// MaxResults is the effective result cap: the request's, else the configured default.
	MaxResults int `json:"max_results"`
	// Language is the language sent, after applying the configured default ("" = none).
	Language    string `json:"language,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        string `json:"body"`
}

// Time precisions of HitMessage.TimePrecision.
const (
	PrecisionMS     = "ms"
	PrecisionMinute = "minute"
	PrecisionDay    = "day"
)

// HitMessage is one message a search or recall hit cites, with what a client needs
// to answer from it without reading the chunk: who wrote it, when, and its text.
type HitMessage struct {
	// Ref is the message's source_ref (Message-ID, slack:<channel>:<ts>, batch
	// ref, document path).
	Ref string `json:"ref"`
	// Author is the sender as the store knows them ("" when unknown, and for
	// documents): a chat display name, or an e-mail From ("Name <addr>").
	Author string `json:"author,omitempty"`
	// Time is when the message was sent, RFC 3339 / ISO 8601 in UTC ("Z"): the
	// store keeps instants, not the sender's UTC offset. "" when unknown.
	Time string `json:"time,omitempty"`
	// TimePrecision says how much of Time is known: PrecisionMS (exact),
	// PrecisionMinute (seconds are zero) or PrecisionDay (the time of day is zero).
	TimePrecision string `json:"time_precision,omitempty"`
	// Text is the message's text, at most the result's MessageTextMaxChars
	// characters (cut on a word boundary, ending in "…", Truncated set).
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ChunkHit is one chunk in a search, recall or browse result. Every hit cites where
// it came from.
type ChunkHit struct {
	ID          string   `json:"id"`
	SourceKind  string   `json:"source_kind"`
	SourceID    string   `json:"source_id"`
	SourceRef   string   `json:"source_ref,omitempty"`
	SourceRefs  []string `json:"source_refs,omitempty"`
	Title       string   `json:"title,omitempty"`
	TimestampMS int64    `json:"timestamp_ms"`
	Snippet     string   `json:"snippet"`
	Score       float64  `json:"score,omitempty"`
	Seq         int      `json:"seq"`
	Tags        []string `json:"tags,omitempty"`
	// Messages are the cited messages (search and recall only), in the order of
	// the cited refs (SourceRef first, then the rest of SourceRefs), at most
	// MaxHitMessages.
	Messages []HitMessage `json:"messages,omitempty"`
}

// SearchResult is the result of memory_search / memory.search.
type SearchResult struct {
	Chunks []ChunkHit `json:"chunks"`
	// MessageTextMaxChars is the bound applied to each hit message's text in this
	// result (characters).
	MessageTextMaxChars int `json:"message_text_max_chars,omitempty"`
	// Omitted counts hits left out to keep the result under MaxResultBytes.
	Omitted int `json:"omitted,omitempty"`
	// Hint tells a person what to do when the store is empty.
	Hint string `json:"hint,omitempty"`
	// Resolved says which names or addresses in the query were read as an
	// address book's contacts, and as which entities (Filter "query").
	Resolved []Resolution `json:"resolved,omitempty"`
}

// Recall modes.
const (
	ModeLexical  = "lexical"
	ModeHybrid   = "hybrid"
	ModeSemantic = "semantic"
)

// RecallResult is the result of memory_recall / memory.recall.
type RecallResult struct {
	Chunks []ChunkHit `json:"chunks"`
	Mode   string     `json:"mode"`
	// MessageTextMaxChars and Omitted are as in SearchResult.
	MessageTextMaxChars int `json:"message_text_max_chars,omitempty"`
	Omitted             int `json:"omitted,omitempty"`
	// Note says why a mode was chosen when recall fell back (e.g. embedder unreachable).
	Note string `json:"note,omitempty"`
	Hint string `json:"hint,omitempty"`
	// Resolved is as in SearchResult.
	Resolved []Resolution `json:"resolved,omitempty"`
}

// Attachment is a file attached to a message: noted, never ingested.
type Attachment struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type,omitempty"`
	Size        int    `json:"size,omitempty"`
}

// Chunk is one chunk with its full text, as returned by chunk_get / tree.read_chunk.
type Chunk struct {
	ID               string       `json:"id"`
	SourceKind       string       `json:"source_kind"`
	SourceID         string       `json:"source_id"`
	SourceRef        string       `json:"source_ref,omitempty"`
	SourceRefs       []string     `json:"source_refs,omitempty"`
	Title            string       `json:"title,omitempty"`
	TimestampMS      int64        `json:"timestamp_ms"`
	TimeRangeStartMS int64        `json:"time_range_start_ms"`
	TimeRangeEndMS   int64        `json:"time_range_end_ms"`
	Seq              int          `json:"seq"`
	TokenCount       int          `json:"token_count"`
	Text             string       `json:"text"`
	Tags             []string     `json:"tags,omitempty"`
	Entities         []string     `json:"entities,omitempty"`
	Attachments      []Attachment `json:"attachments,omitempty"`
}

// ChunkResult is the result of chunk_get.
type ChunkResult struct {
	Chunk Chunk `json:"chunk"`
}

// ListResult is the result of chunks_list / tree.browse.
type ListResult struct {
	Chunks []ChunkHit `json:"chunks"`
	Total  int        `json:"total"`
	// Next is the offset of the next page, 0 (absent) after the last.
	Next int    `json:"next,omitempty"`
	Hint string `json:"hint,omitempty"`
	// Resolved says what filter values that are not stored ids were taken to
	// mean (a name for entity ids, a conversation for its months, an alias).
	Resolved []Resolution `json:"resolved,omitempty"`
}

// Source list groupings (SourcesListRequest.Group).
const (
	GroupMonth        = "month"
	GroupConversation = "conversation"
)

// Resolution is one filter value read as something else: Filter is the
// argument (entity_ids, source_ids, source_kinds, kinds, kind; query for a
// name in a search's query), Value what was given, To what it was taken to
// mean (ids or kinds; empty when nothing).
type Resolution struct {
	Filter string   `json:"filter"`
	Value  string   `json:"value"`
	To     []string `json:"to"`
}

// Entity is one canonical entity with its reference count.
type Entity struct {
	EntityID   string `json:"entity_id"`
	Kind       string `json:"kind"`
	Surface    string `json:"surface"`
	Count      int    `json:"count"`
	LastSeenMS int64  `json:"last_seen_ms,omitempty"`
}

// EntitiesResult is the result of entities_top / tree.top_entities.
type EntitiesResult struct {
	Entities []Entity `json:"entities"`
	// Total is how many entities (of the kind asked) there are.
	Total int `json:"total"`
	// Next is the offset of the next page, 0 (absent) after the last.
	Next     int          `json:"next,omitempty"`
	Hint     string       `json:"hint,omitempty"`
	Resolved []Resolution `json:"resolved,omitempty"`
}

// Source is one ingested source (a mail thread, a chat channel, a document).
type Source struct {
	SourceKind   string `json:"source_kind"`
	SourceID     string `json:"source_id"`
	DisplayName  string `json:"display_name"`
	Title        string `json:"title,omitempty"`
	ChunkCount   int    `json:"chunk_count"`
	FirstMS      int64  `json:"first_ms"`
	MostRecentMS int64  `json:"most_recent_ms"`
	// Months are a chat conversation's months (YYYY-MM, newest first) when
	// sources are grouped by conversation; SourceID is then the conversation.
	Months []string `json:"months,omitempty"`
}

// SourcesResult is the result of sources_list / tree.list_sources.
type SourcesResult struct {
	Sources []Source `json:"sources"`
	// Total is how many sources match the kinds and query.
	Total int `json:"total"`
	// Next is the offset of the next page, 0 (absent) after the last.
	Next     int          `json:"next,omitempty"`
	Hint     string       `json:"hint,omitempty"`
	Resolved []Resolution `json:"resolved,omitempty"`
}

// WebResult is one normalised SearXNG result.
type WebResult struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
	Source  string `json:"source"`
}

// SearxngResult is the result of the searxng_search tool.
type SearxngResult struct {
	Query   string      `json:"query"`
	Results []WebResult `json:"results"`
}
