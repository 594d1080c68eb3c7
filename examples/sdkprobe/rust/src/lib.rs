//! sdkprobe (Rust): one call runs the host function named by `fn` through the
//! SDK's typed wrapper and summarises the reply; a host error is returned as is,
//! so the client sees it as an isError result with the host's message.
use openhuman::json::Value;
use openhuman::{memory, searxng, Error, Request, Result};

fn handle(r: &Request) -> Result<Value> {
    let a = &r.arguments;
    let f = a.str_of("fn");
    let q = a.str_of("query");
    let k = a.int_of("k") as u32; // passed on unchecked: the host checks it
    let kinds: Vec<&str> = a.array_of("kinds").iter().filter_map(Value::as_str).collect();
    let (count, total, first): (usize, i64, String) = match f {
        "memory_search" => {
            let h = memory::search(&memory::Query { query: q, k })?;
            (h.chunks.len(), 0, h.chunks.first().map(|c| c.id.clone()).unwrap_or_default())
        }
        "memory_recall" => {
            let h = memory::recall(&memory::Query { query: q, k })?;
            (h.chunks.len(), 0, h.mode)
        }
        "chunk_get" => {
            let c = memory::get_chunk(a.str_of("id"))?;
            (1, c.timestamp_ms, c.text)
        }
        "chunks_list" => {
            let h = memory::list_chunks(&memory::ChunksQuery { source_kinds: kinds, k, ..Default::default() })?;
            (h.chunks.len(), h.total, h.chunks.first().map(|c| c.id.clone()).unwrap_or_default())
        }
        "entities_top" => {
            let e = memory::top_entities(&memory::EntitiesQuery { kind: a.str_of("kind"), k, offset: 0 })?;
            (e.entities.len(), e.total, e.entities.first().map(|e| e.entity_id.clone()).unwrap_or_default())
        }
        "sources_list" => {
            let s = memory::list_sources(&memory::SourcesQuery { kinds, k, ..Default::default() })?;
            (s.sources.len(), s.total, s.sources.first().map(|s| s.source_id.clone()).unwrap_or_default())
        }
        "searxng_search" => {
            let cats: Vec<&str> = a.array_of("categories").iter().filter_map(Value::as_str).collect();
            let s = searxng::search(&searxng::Query { query: q, categories: cats, ..Default::default() })?;
            (s.body.len(), s.status, s.body)
        }
        "raw" => {
            let reply = memory::raw::sources_list(q);
            (reply.len(), 0, String::from_utf8(reply).unwrap_or_default())
        }
        "log" => {
            openhuman::log(openhuman::LOG_INFO, q);
            (0, 0, String::new())
        }
        "args" => {
            let args = r.args(&["fn", "kinds", "k", "name"])?;
            let kinds = args.string_array("kinds", 3)?;
            let k = args.k()?;
            let name = args.required_str("name")?;
            (kinds.len(), k as i64, [name, "|", &kinds.join(",")].concat())
        }
        "echo" => return Ok(Value::object([("echo", a.clone()), ("client", r.client.as_str().into())])),
        "array" => return Ok(Value::Array(Vec::new())),
        "panic" => {
            let v: Vec<u8> = Vec::new();
            (v[k as usize] as usize, 0, String::new())
        }
        _ => return Err(Error::invalid_params(["unknown fn `", f, "`"].concat())),
    };
    Ok(Value::object([("fn", f.into()), ("count", count.into()), ("total", total.into()), ("first", first.into())]))
}

openhuman::export!(handle);
