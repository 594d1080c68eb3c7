//! Capability `web.searxng`: one web search through the operator's SearXNG (the
//! one pinned HTTP route). The reply carries SearXNG's JSON body as text; parse
//! it with [`crate::json::parse`] when you need its results.

use crate::json::Value;
use crate::{call_host, Result};

#[link(wasm_import_module = "openhuman")]
extern "C" {
    fn searxng_search(ptr: *const u8, len: u32) -> u64;
}

/// searxng_search's request.
#[derive(Clone, Debug, Default)]
pub struct Query<'a> {
    pub query: &'a str,
    /// "general", "news", "images"; empty for SearXNG's default.
    pub categories: Vec<&'a str>,
    pub language: &'a str,
    /// 0 for the host's default.
    pub max_results: u32,
}

/// SearXNG's answer.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status SearXNG answered with.
    pub status: i64,
    pub max_results: i64,
    /// SearXNG's JSON body, as text.
    pub body: String,
    pub raw: Value,
}

/// Searches the web (host function searxng_search). SearXNG disabled or down is
/// an `unavailable` [`crate::Error`].
pub fn search(q: &Query) -> Result<Reply> {
    let mut req = Value::object([("query", Value::from(q.query))]);
    if !q.categories.is_empty() {
        req = req.set("categories", Value::Array(q.categories.iter().map(|s| Value::from(*s)).collect()));
    }
    if !q.language.is_empty() {
        req = req.set("language", q.language.into());
    }
    if q.max_results > 0 {
        req = req.set("max_results", q.max_results.into());
    }
    let v = call_host("searxng_search", searxng_search, &req)?;
    Ok(Reply { status: v.int_of("status"), max_results: v.int_of("max_results"), body: v.str_of("body").into(), raw: v })
}

/// The undecoded call: request JSON in, reply bytes out.
pub fn search_raw(req: &str) -> Vec<u8> {
    crate::call_host_raw(searxng_search, req.as_bytes())
}
