// sdkprobe (AssemblyScript): one call runs the host function named by `fn`
// through the SDK's typed wrapper and summarises the reply; a host error is
// returned as is, so the client sees it as an isError result with the host's
// message.
import { Request, Result, ToolError, Value, log, LOG_INFO, memory, searxng, serve } from "../../../sdk/assemblyscript/assembly/index";
export { oh_alloc } from "../../../sdk/assemblyscript/assembly/index";

function strings(v: Array<Value>): Array<string> {
  const out = new Array<string>();
  for (let i = 0; i < v.length; i++) out.push(v[i].s);
  return out;
}

function summary(f: string, count: f64, total: f64, first: string): Result<Value> {
  return Result.ok<Value>(Value.object().setStr("fn", f).setNum("count", count).setNum("total", total).setStr("first", first));
}

function handle(r: Request): Result<Value> {
  const a = r.arguments;
  const f = a.strOf("fn");
  const q = a.strOf("query");
  const k = <i32>a.numOf("k"); // passed on unchecked: the host checks it
  if (f == "memory_search" || f == "memory_recall") {
    const h = f == "memory_search" ? memory.search(q, k) : memory.recall(q, k);
    if (h.failed) return Result.err<Value>(h.error!);
    const first = f == "memory_recall" ? h.val.mode : h.val.chunks.length > 0 ? h.val.chunks[0].id : "";
    return summary(f, h.val.chunks.length, 0, first);
  }
  if (f == "chunk_get") {
    const c = memory.getChunk(a.strOf("id"));
    if (c.failed) return Result.err<Value>(c.error!);
    return summary(f, 1, c.val.timestampMs, c.val.text);
  }
  if (f == "chunks_list") {
    const cq = new memory.ChunksQuery();
    cq.sourceKinds = strings(a.arrayOf("kinds"));
    cq.k = k;
    const h = memory.listChunks(cq);
    if (h.failed) return Result.err<Value>(h.error!);
    return summary(f, h.val.chunks.length, h.val.total, h.val.chunks.length > 0 ? h.val.chunks[0].id : "");
  }
  if (f == "entities_top") {
    const e = memory.topEntities(a.strOf("kind"), k);
    if (e.failed) return Result.err<Value>(e.error!);
    return summary(f, e.val.entities.length, e.val.total, e.val.entities.length > 0 ? e.val.entities[0].entityId : "");
  }
  if (f == "sources_list") {
    const sq = new memory.SourcesQuery();
    sq.kinds = strings(a.arrayOf("kinds"));
    sq.k = k;
    const s = memory.listSources(sq);
    if (s.failed) return Result.err<Value>(s.error!);
    return summary(f, s.val.sources.length, s.val.total, s.val.sources.length > 0 ? s.val.sources[0].sourceId : "");
  }
  if (f == "searxng_search") {
    const s = searxng.search(q, strings(a.arrayOf("categories")));
    if (s.failed) return Result.err<Value>(s.error!);
    return summary(f, s.val.body.length, s.val.status, s.val.body);
  }
  if (f == "raw") {
    const reply = memory.raw.sourcesList(q);
    return summary(f, String.UTF8.byteLength(reply), 0, reply);
  }
  if (f == "log") {
    log(LOG_INFO, q);
    return summary(f, 0, 0, "");
  }
  if (f == "args") {
    const args = r.args(["fn", "kinds", "k", "name"]);
    if (args.failed) return Result.err<Value>(args.error!);
    const kinds = args.val.stringArray("kinds", 3);
    if (kinds.failed) return Result.err<Value>(kinds.error!);
    const k = args.val.k();
    if (k.failed) return Result.err<Value>(k.error!);
    const name = args.val.requiredStr("name");
    if (name.failed) return Result.err<Value>(name.error!);
    return summary(f, kinds.val.length, k.val.n, name.val + "|" + kinds.val.join(","));
  }
  if (f == "echo") return Result.ok<Value>(Value.object().set("echo", a).setStr("client", r.client));
  if (f == "array") return Result.ok<Value>(Value.array());
  if (f == "panic") {
    const v = new Array<i32>(0);
    return summary(f, v[k], 0, "");
  }
  return Result.err<Value>(ToolError.invalidParams("unknown fn `" + f + "`"));
}

export function oh_call(ptr: usize, len: i32): i64 {
  return serve(ptr, len, handle);
}
