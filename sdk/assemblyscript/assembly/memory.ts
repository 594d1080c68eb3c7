// Capability memory.read: typed wrappers of the six host functions that read the
// memory tree. Each returns the decoded reply (the whole reply kept in `raw` for
// fields the classes do not name), or the host's error (a bad request, an unknown
// id, the store unavailable) as a ToolError the handler can return as is.

import { Value } from "./json";
import { Result, ToolError, callHost, callHostRaw } from "./abi";

// @ts-ignore: decorator
@external("openhuman", "memory_search")
declare function memory_search(ptr: usize, len: i32): i64;
// @ts-ignore: decorator
@external("openhuman", "memory_recall")
declare function memory_recall(ptr: usize, len: i32): i64;
// @ts-ignore: decorator
@external("openhuman", "chunk_get")
declare function chunk_get(ptr: usize, len: i32): i64;
// @ts-ignore: decorator
@external("openhuman", "chunks_list")
declare function chunks_list(ptr: usize, len: i32): i64;
// @ts-ignore: decorator
@external("openhuman", "entities_top")
declare function entities_top(ptr: usize, len: i32): i64;
// @ts-ignore: decorator
@external("openhuman", "sources_list")
declare function sources_list(ptr: usize, len: i32): i64;

/** A chunk as lists and searches return it. */
export class Hit {
  id: string = "";
  sourceKind: string = "";
  sourceId: string = "";
  title: string = "";
  timestampMs: f64 = 0;
  snippet: string = "";
  score: f64 = 0;
  seq: f64 = 0;
  raw: Value = Value.null();
  static from(v: Value): Hit {
    const h = new Hit();
    h.id = v.strOf("id");
    h.sourceKind = v.strOf("source_kind");
    h.sourceId = v.strOf("source_id");
    h.title = v.strOf("title");
    h.timestampMs = v.numOf("timestamp_ms");
    h.snippet = v.strOf("snippet");
    h.score = v.numOf("score");
    h.seq = v.numOf("seq");
    h.raw = v;
    return h;
  }
}

/** A page of chunks (search, recall, chunksList). total and next: chunksList
 * only (next is the following page's offset, 0 after the last); mode: recall. */
export class Hits {
  chunks: Array<Hit> = [];
  total: f64 = 0;
  next: f64 = 0;
  mode: string = "";
  raw: Value = Value.null();
}

function hits(r: Result<Value>): Result<Hits> {
  if (r.failed) return Result.err<Hits>(r.error!);
  const v = r.val;
  const h = new Hits();
  const items = v.arrayOf("chunks");
  for (let i = 0; i < items.length; i++) h.chunks.push(Hit.from(items[i]));
  h.total = v.numOf("total");
  h.next = v.numOf("next");
  h.mode = v.strOf("mode");
  h.raw = v;
  return Result.ok<Hits>(h);
}

function strings(list: Array<string>): Value {
  const a = Value.array();
  for (let i = 0; i < list.length; i++) a.items.push(Value.str(list[i]));
  return a;
}

/** Keyword search of the memory tree (memory_search); k is 1..50. */
export function search(query: string, k: i32): Result<Hits> {
  return hits(callHost("memory_search", memory_search, Value.object().setStr("query", query).setNum("k", k)));
}

/** Meaning-based recall (memory_recall); Hits.mode says how it ranked. */
export function recall(query: string, k: i32): Result<Hits> {
  return hits(callHost("memory_recall", memory_recall, Value.object().setStr("query", query).setNum("k", k)));
}

/** One chunk with its full text. */
export class Chunk {
  id: string = "";
  sourceKind: string = "";
  sourceId: string = "";
  title: string = "";
  timestampMs: f64 = 0;
  text: string = "";
  raw: Value = Value.null();
}

/** Reads one chunk (chunk_get); an unknown id is a not_found ToolError. */
export function getChunk(id: string): Result<Chunk> {
  const r = callHost("chunk_get", chunk_get, Value.object().setStr("id", id));
  if (r.failed) return Result.err<Chunk>(r.error!);
  const got = r.val.get("chunk");
  if (got == null) return Result.err<Chunk>(ToolError.internal("chunk_get replied without a chunk"));
  const v = got;
  const c = new Chunk();
  c.id = v.strOf("id");
  c.sourceKind = v.strOf("source_kind");
  c.sourceId = v.strOf("source_id");
  c.title = v.strOf("title");
  c.timestampMs = v.numOf("timestamp_ms");
  c.text = v.strOf("text");
  c.raw = v;
  return Result.ok<Chunk>(c);
}

/** chunks_list's filters (AND-combined; empty means no filter). */
export class ChunksQuery {
  sourceKinds: Array<string> = [];
  sourceIds: Array<string> = [];
  entityIds: Array<string> = [];
  /** -1: unset. */
  sinceMs: f64 = -1;
  untilMs: f64 = -1;
  query: string = "";
  k: i32 = 10;
  offset: i32 = 0;
}

/** Lists chunks newest first (chunks_list). */
export function listChunks(q: ChunksQuery): Result<Hits> {
  const req = Value.object().setNum("k", q.k);
  if (q.sourceKinds.length > 0) req.set("source_kinds", strings(q.sourceKinds));
  if (q.sourceIds.length > 0) req.set("source_ids", strings(q.sourceIds));
  if (q.entityIds.length > 0) req.set("entity_ids", strings(q.entityIds));
  if (q.sinceMs >= 0) req.setNum("since_ms", q.sinceMs);
  if (q.untilMs >= 0) req.setNum("until_ms", q.untilMs);
  if (q.query.length > 0) req.setStr("query", q.query);
  if (q.offset > 0) req.setNum("offset", q.offset);
  return hits(callHost("chunks_list", chunks_list, req));
}

/** A named entity and how often it appears. */
export class Entity {
  entityId: string = "";
  kind: string = "";
  surface: string = "";
  count: f64 = 0;
  lastSeenMs: f64 = 0;
}

/** A page of entities. */
export class Entities {
  entities: Array<Entity> = [];
  total: f64 = 0;
  next: f64 = 0;
  raw: Value = Value.null();
}

/** The most mentioned entities (entities_top); kind "" for every kind. */
export function topEntities(kind: string, k: i32, offset: i32 = 0): Result<Entities> {
  const req = Value.object().setNum("k", k);
  if (kind.length > 0) req.setStr("kind", kind);
  if (offset > 0) req.setNum("offset", offset);
  const r = callHost("entities_top", entities_top, req);
  if (r.failed) return Result.err<Entities>(r.error!);
  const v = r.val;
  const out = new Entities();
  const items = v.arrayOf("entities");
  for (let i = 0; i < items.length; i++) {
    const e = new Entity();
    e.entityId = items[i].strOf("entity_id");
    e.kind = items[i].strOf("kind");
    e.surface = items[i].strOf("surface");
    e.count = items[i].numOf("count");
    e.lastSeenMs = items[i].numOf("last_seen_ms");
    out.entities.push(e);
  }
  out.total = v.numOf("total");
  out.next = v.numOf("next");
  out.raw = v;
  return Result.ok<Entities>(out);
}

/** A source: a mail thread, a chat, a document. */
export class Source {
  sourceKind: string = "";
  sourceId: string = "";
  displayName: string = "";
  chunkCount: f64 = 0;
  firstMs: f64 = 0;
  mostRecentMs: f64 = 0;
}

/** A page of sources. */
export class Sources {
  sources: Array<Source> = [];
  total: f64 = 0;
  next: f64 = 0;
  raw: Value = Value.null();
}

/** sources_list's request; k 0 means the host's default page (50). */
export class SourcesQuery {
  kinds: Array<string> = [];
  query: string = "";
  k: i32 = 0;
  offset: i32 = 0;
}

/** Lists the sources, most recent first (sources_list). */
export function listSources(q: SourcesQuery): Result<Sources> {
  const req = Value.object();
  if (q.kinds.length > 0) req.set("kinds", strings(q.kinds));
  if (q.query.length > 0) req.setStr("query", q.query);
  if (q.k > 0) req.setNum("k", q.k);
  if (q.offset > 0) req.setNum("offset", q.offset);
  const r = callHost("sources_list", sources_list, req);
  if (r.failed) return Result.err<Sources>(r.error!);
  const v = r.val;
  const out = new Sources();
  const items = v.arrayOf("sources");
  for (let i = 0; i < items.length; i++) {
    const s = new Source();
    s.sourceKind = items[i].strOf("source_kind");
    s.sourceId = items[i].strOf("source_id");
    s.displayName = items[i].strOf("display_name");
    s.chunkCount = items[i].numOf("chunk_count");
    s.firstMs = items[i].numOf("first_ms");
    s.mostRecentMs = items[i].numOf("most_recent_ms");
    out.sources.push(s);
  }
  out.total = v.numOf("total");
  out.next = v.numOf("next");
  out.raw = v;
  return Result.ok<Sources>(out);
}

/** Undecoded calls: request JSON in, reply text ({"ok":…}/{"error":…}) out. */
export namespace raw {
  export function memorySearch(req: string): string { return callHostRaw(memory_search, req); }
  export function memoryRecall(req: string): string { return callHostRaw(memory_recall, req); }
  export function chunkGet(req: string): string { return callHostRaw(chunk_get, req); }
  export function chunksList(req: string): string { return callHostRaw(chunks_list, req); }
  export function entitiesTop(req: string): string { return callHostRaw(entities_top, req); }
  export function sourcesList(req: string): string { return callHostRaw(sources_list, req); }
}
