//! Capability `memory.read`: typed wrappers of the six host functions that read
//! the memory tree. Each takes a request struct (fields as in sdk/abi/abi.go;
//! `Default` leaves every filter unset) and returns the decoded reply, with the
//! whole reply kept in `raw` for fields the structs do not name. A host error
//! (a bad request, an unknown id, the store unavailable) comes back as an
//! [`Error`] the handler can return as is: the client sees its message.
//!
//! [`raw`] calls the same functions with JSON text and returns the reply bytes.

use crate::json::Value;
use crate::{call_host, Result};

#[link(wasm_import_module = "openhuman")]
extern "C" {
    fn memory_search(ptr: *const u8, len: u32) -> u64;
    fn memory_recall(ptr: *const u8, len: u32) -> u64;
    fn chunk_get(ptr: *const u8, len: u32) -> u64;
    fn chunks_list(ptr: *const u8, len: u32) -> u64;
    fn entities_top(ptr: *const u8, len: u32) -> u64;
    fn sources_list(ptr: *const u8, len: u32) -> u64;
}

/// Undecoded calls: request JSON in, reply bytes (`{"ok":…}`/`{"error":…}`) out.
pub mod raw {
    use crate::call_host_raw;
    pub fn memory_search(req: &str) -> Vec<u8> {
        call_host_raw(super::memory_search, req.as_bytes())
    }
    pub fn memory_recall(req: &str) -> Vec<u8> {
        call_host_raw(super::memory_recall, req.as_bytes())
    }
    pub fn chunk_get(req: &str) -> Vec<u8> {
        call_host_raw(super::chunk_get, req.as_bytes())
    }
    pub fn chunks_list(req: &str) -> Vec<u8> {
        call_host_raw(super::chunks_list, req.as_bytes())
    }
    pub fn entities_top(req: &str) -> Vec<u8> {
        call_host_raw(super::entities_top, req.as_bytes())
    }
    pub fn sources_list(req: &str) -> Vec<u8> {
        call_host_raw(super::sources_list, req.as_bytes())
    }
}

/// A chunk as lists and searches return it.
#[derive(Clone, Debug, Default)]
pub struct Hit {
    pub id: String,
    pub source_kind: String,
    pub source_id: String,
    pub title: String,
    pub timestamp_ms: i64,
    pub snippet: String,
    pub score: f64,
    pub seq: i64,
}

impl Hit {
    fn from(v: &Value) -> Hit {
        Hit {
            id: v.str_of("id").into(),
            source_kind: v.str_of("source_kind").into(),
            source_id: v.str_of("source_id").into(),
            title: v.str_of("title").into(),
            timestamp_ms: v.int_of("timestamp_ms"),
            snippet: v.str_of("snippet").into(),
            score: v.get("score").and_then(Value::as_f64).unwrap_or(0.0),
            seq: v.int_of("seq"),
        }
    }
}

fn hits(v: &Value) -> Vec<Hit> {
    v.array_of("chunks").iter().map(Hit::from).collect()
}

/// A page of chunks: search, recall and chunks_list. `total` and `next` are set
/// by chunks_list only (`next` is the offset of the following page, 0 after the last).
#[derive(Clone, Debug)]
pub struct Hits {
    pub chunks: Vec<Hit>,
    pub total: i64,
    pub next: i64,
    /// recall only: lexical, hybrid or semantic.
    pub mode: String,
    pub raw: Value,
}

impl Hits {
    fn from(v: Value) -> Hits {
        Hits { chunks: hits(&v), total: v.int_of("total"), next: v.int_of("next"), mode: v.str_of("mode").into(), raw: v }
    }
}

/// memory_search's and memory_recall's request.
#[derive(Clone, Debug, Default)]
pub struct Query<'a> {
    pub query: &'a str,
    /// 1..=50.
    pub k: u32,
}

fn query_json(q: &Query) -> Value {
    Value::object([("query", q.query.into()), ("k", q.k.into())])
}

/// Keyword search of the memory tree (host function memory_search).
pub fn search(q: &Query) -> Result<Hits> {
    call_host("memory_search", memory_search, &query_json(q)).map(Hits::from)
}

/// Meaning-based recall (host function memory_recall); `mode` says how it ranked.
pub fn recall(q: &Query) -> Result<Hits> {
    call_host("memory_recall", memory_recall, &query_json(q)).map(Hits::from)
}

/// One chunk with its full text.
#[derive(Clone, Debug)]
pub struct Chunk {
    pub id: String,
    pub source_kind: String,
    pub source_id: String,
    pub title: String,
    pub timestamp_ms: i64,
    pub text: String,
    pub raw: Value,
}

/// Reads one chunk by id (host function chunk_get); an unknown id is `not_found`.
pub fn get_chunk(id: &str) -> Result<Chunk> {
    let v = call_host("chunk_get", chunk_get, &Value::object([("id", id.into())]))?;
    let c = v.get("chunk").cloned().unwrap_or(Value::Null);
    Ok(Chunk {
        id: c.str_of("id").into(),
        source_kind: c.str_of("source_kind").into(),
        source_id: c.str_of("source_id").into(),
        title: c.str_of("title").into(),
        timestamp_ms: c.int_of("timestamp_ms"),
        text: c.str_of("text").into(),
        raw: c,
    })
}

/// chunks_list's filters (AND-combined; empty means no filter).
#[derive(Clone, Debug, Default)]
pub struct ChunksQuery<'a> {
    pub source_kinds: Vec<&'a str>,
    pub source_ids: Vec<&'a str>,
    pub entity_ids: Vec<&'a str>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub query: &'a str,
    pub k: u32,
    pub offset: u32,
}

/// Lists chunks newest first (host function chunks_list).
pub fn list_chunks(q: &ChunksQuery) -> Result<Hits> {
    let mut v = Value::object([("k", Value::from(q.k))]);
    for (key, list) in [("source_kinds", &q.source_kinds), ("source_ids", &q.source_ids), ("entity_ids", &q.entity_ids)] {
        if !list.is_empty() {
            v = v.set(key, Value::Array(list.iter().map(|s| Value::from(*s)).collect()));
        }
    }
    if let Some(ms) = q.since_ms {
        v = v.set("since_ms", ms.into());
    }
    if let Some(ms) = q.until_ms {
        v = v.set("until_ms", ms.into());
    }
    if !q.query.is_empty() {
        v = v.set("query", q.query.into());
    }
    if q.offset > 0 {
        v = v.set("offset", q.offset.into());
    }
    call_host("chunks_list", chunks_list, &v).map(Hits::from)
}

/// A named entity (person, organisation, place, ...) and how often it appears.
#[derive(Clone, Debug, Default)]
pub struct Entity {
    pub entity_id: String,
    pub kind: String,
    pub surface: String,
    pub count: i64,
    pub last_seen_ms: i64,
}

/// A page of entities.
#[derive(Clone, Debug)]
pub struct Entities {
    pub entities: Vec<Entity>,
    pub total: i64,
    pub next: i64,
    pub raw: Value,
}

/// entities_top's request.
#[derive(Clone, Debug, Default)]
pub struct EntitiesQuery<'a> {
    /// "" for every kind.
    pub kind: &'a str,
    pub k: u32,
    pub offset: u32,
}

/// The most mentioned entities (host function entities_top).
pub fn top_entities(q: &EntitiesQuery) -> Result<Entities> {
    let mut req = Value::object([("k", Value::from(q.k))]);
    if !q.kind.is_empty() {
        req = req.set("kind", q.kind.into());
    }
    if q.offset > 0 {
        req = req.set("offset", q.offset.into());
    }
    let v = call_host("entities_top", entities_top, &req)?;
    let entities = v
        .array_of("entities")
        .iter()
        .map(|e| Entity {
            entity_id: e.str_of("entity_id").into(),
            kind: e.str_of("kind").into(),
            surface: e.str_of("surface").into(),
            count: e.int_of("count"),
            last_seen_ms: e.int_of("last_seen_ms"),
        })
        .collect();
    Ok(Entities { entities, total: v.int_of("total"), next: v.int_of("next"), raw: v })
}

/// A source: a mail thread, a chat, a document.
#[derive(Clone, Debug, Default)]
pub struct Source {
    pub source_kind: String,
    pub source_id: String,
    pub display_name: String,
    pub chunk_count: i64,
    pub first_ms: i64,
    pub most_recent_ms: i64,
}

/// A page of sources.
#[derive(Clone, Debug)]
pub struct Sources {
    pub sources: Vec<Source>,
    pub total: i64,
    pub next: i64,
    pub raw: Value,
}

/// sources_list's request; k 0 means the host's default page (50).
#[derive(Clone, Debug, Default)]
pub struct SourcesQuery<'a> {
    pub kinds: Vec<&'a str>,
    pub query: &'a str,
    pub k: u32,
    pub offset: u32,
}

/// Lists the sources, most recent first (host function sources_list).
pub fn list_sources(q: &SourcesQuery) -> Result<Sources> {
    let mut req = Value::Object(Vec::new());
    if !q.kinds.is_empty() {
        req = req.set("kinds", Value::Array(q.kinds.iter().map(|s| Value::from(*s)).collect()));
    }
    if !q.query.is_empty() {
        req = req.set("query", q.query.into());
    }
    if q.k > 0 {
        req = req.set("k", q.k.into());
    }
    if q.offset > 0 {
        req = req.set("offset", q.offset.into());
    }
    let v = call_host("sources_list", sources_list, &req)?;
    let sources = v
        .array_of("sources")
        .iter()
        .map(|s| Source {
            source_kind: s.str_of("source_kind").into(),
            source_id: s.str_of("source_id").into(),
            display_name: s.str_of("display_name").into(),
            chunk_count: s.int_of("chunk_count"),
            first_ms: s.int_of("first_ms"),
            most_recent_ms: s.int_of("most_recent_ms"),
        })
        .collect();
    Ok(Sources { sources, total: v.int_of("total"), next: v.int_of("next"), raw: v })
}
