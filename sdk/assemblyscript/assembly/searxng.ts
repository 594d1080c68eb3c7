// Capability web.searxng: one web search through the operator's SearXNG (the one
// pinned HTTP route). The reply carries SearXNG's JSON body as text; parse it
// with json.parse when you need its results.

import { Value } from "./json";
import { Result, callHost, callHostRaw } from "./abi";

// @ts-ignore: decorator
@external("openhuman", "searxng_search")
declare function searxng_search(ptr: usize, len: i32): i64;

/** SearXNG's answer. */
export class Reply {
  /** The HTTP status SearXNG answered with. */
  status: f64 = 0;
  maxResults: f64 = 0;
  /** SearXNG's JSON body, as text. */
  body: string = "";
  raw: Value = Value.null();
}

/** Searches the web (searxng_search). categories: "general", "news", "images"
 * (empty: SearXNG's default); language "" and maxResults 0 for the defaults.
 * SearXNG disabled or down is an unavailable ToolError. */
export function search(query: string, categories: Array<string> = [], language: string = "", maxResults: i32 = 0): Result<Reply> {
  const req = Value.object().setStr("query", query);
  if (categories.length > 0) {
    const a = Value.array();
    for (let i = 0; i < categories.length; i++) a.items.push(Value.str(categories[i]));
    req.set("categories", a);
  }
  if (language.length > 0) req.setStr("language", language);
  if (maxResults > 0) req.setNum("max_results", maxResults);
  const r = callHost("searxng_search", searxng_search, req);
  if (r.failed) return Result.err<Reply>(r.error!);
  const out = new Reply();
  out.status = r.val.numOf("status");
  out.maxResults = r.val.numOf("max_results");
  out.body = r.val.strOf("body");
  out.raw = r.val;
  return Result.ok<Reply>(out);
}

/** The undecoded call: request JSON in, reply text out. */
export function searchRaw(req: string): string {
  return callHostRaw(searxng_search, req);
}
