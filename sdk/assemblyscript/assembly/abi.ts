// The "openhuman/1" ABI for AssemblyScript: oh_alloc, serving one oh_call,
// requests, argument checks, errors and host calls (sdk/openhuman.h has the
// whole contract).

import { Kind, Value, parseBytes } from "./json";

/** The ABI this SDK speaks (the manifest's `abi`). */
export const ABI_VERSION = "openhuman/1";

/** A tool's failure: the client sees message as an isError result. */
export class ToolError {
  constructor(public code: string, public message: string) {}
  static invalidParams(message: string): ToolError {
    return new ToolError("invalid_params", message);
  }
  static notFound(message: string): ToolError {
    return new ToolError("not_found", message);
  }
  /** A dependency (the memory tree, SearXNG) failed. */
  static unavailable(message: string): ToolError {
    return new ToolError("unavailable", message);
  }
  /** A bug in the tool. */
  static internal(message: string): ToolError {
    return new ToolError("internal", message);
  }
  toValue(): Value {
    return Value.object().setStr("code", this.code).setStr("message", this.message);
  }
}

/** A value, or the error that prevented it (AssemblyScript has no exceptions). */
export class Result<T> {
  constructor(public value: T | null, public error: ToolError | null) {}
  static ok<T>(v: T): Result<T> {
    return new Result<T>(v, null);
  }
  static err<T>(e: ToolError): Result<T> {
    return new Result<T>(null, e);
  }
  get failed(): bool {
    return this.error != null;
  }
  /** The value; call only when !failed. */
  get val(): T {
    return changetype<T>(this.value);
  }
}

/** One call, as the host passed it to oh_call. */
export class Request {
  tool: string = "";
  /** The caller's arguments: an object, {} when absent. */
  arguments: Value = Value.object();
  /** The client's provenance label, e.g. "mcp:claude-ai". */
  client: string = "";
  requestId: string = "";

  /** The arguments, refusing keys outside allowed ("unexpected argument `x`"). */
  args(allowed: Array<string>): Result<Args> {
    const a = this.arguments;
    if (a.kind != Kind.Object) {
      return Result.err<Args>(ToolError.invalidParams("arguments must be an object, got " + a.typeName()));
    }
    let unknown = "";
    for (let i = 0; i < a.keys.length; i++) {
      if (!allowed.includes(a.keys[i])) {
        if (unknown.length > 0) unknown += ", ";
        unknown += "`" + a.keys[i] + "`";
      }
    }
    if (unknown.length > 0) return Result.err<Args>(ToolError.invalidParams("unexpected argument " + unknown));
    return Result.ok<Args>(new Args(a));
  }
}

/** Checked access to a call's arguments, with the built-in tools' messages. */
export class Args {
  constructor(public v: Value) {}

  /** A string that must be present and not empty (trimmed). */
  requiredStr(name: string): Result<string> {
    const v = this.v.get(name);
    if (v == null || v.isNull) return Result.err<string>(ToolError.invalidParams("missing required argument `" + name + "`"));
    if (v.kind != Kind.String) return Result.err<string>(ToolError.invalidParams("argument `" + name + "` must be a string"));
    const s = v.s.trim();
    if (s.length == 0) return Result.err<string>(ToolError.invalidParams("argument `" + name + "` must not be empty"));
    return Result.ok<string>(s);
  }

  /** A string that may be absent (then def); present, it must not be empty. */
  optionalStr(name: string, def: string): Result<string> {
    const v = this.v.get(name);
    if (v == null || v.isNull) return Result.ok<string>(def);
    if (v.kind != Kind.String) return Result.err<string>(ToolError.invalidParams("argument `" + name + "` must be a string"));
    const s = v.s.trim();
    if (s.length == 0) return Result.err<string>(ToolError.invalidParams("argument `" + name + "` must not be empty when provided"));
    return Result.ok<string>(s);
  }

  /** An optional positive integer at most max (def when absent), as a number
   * Value (read it with .val.n): AssemblyScript's Result holds references only. */
  optionalInt(name: string, max: i64, def: i64): Result<Value> {
    const v = this.v.get(name);
    if (v == null || v.isNull) return Result.ok<Value>(Value.number(<f64>def));
    if (v.kind != Kind.Number || Math.floor(v.n) != v.n) {
      return Result.err<Value>(ToolError.invalidParams("argument `" + name + "` must be a positive integer"));
    }
    if (v.n <= 0) return Result.err<Value>(ToolError.invalidParams("argument `" + name + "` must be greater than zero"));
    if (v.n > <f64>max) {
      return Result.err<Value>(ToolError.invalidParams("argument `" + name + "` must not exceed " + max.toString() + " (got " + (<i64>v.n).toString() + ")"));
    }
    return Result.ok<Value>(v);
  }

  /** An array of strings, trimmed, blank ones dropped (empty when absent), of at
   * most maxItems elements (the input schema's maxItems). */
  stringArray(name: string, maxItems: i32): Result<Array<string>> {
    const out = new Array<string>();
    const v = this.v.get(name);
    if (v == null || v.isNull) return Result.ok<Array<string>>(out);
    if (v.kind != Kind.Array) {
      return Result.err<Array<string>>(ToolError.invalidParams("argument `" + name + "` must be an array of strings, got " + v.typeName()));
    }
    if (v.items.length > maxItems) {
      return Result.err<Array<string>>(ToolError.invalidParams("argument `" + name + "` has " + v.items.length.toString() + " items; at most " + maxItems.toString() + " are allowed (split the filter over several calls)"));
    }
    for (let i = 0; i < v.items.length; i++) {
      const item = v.items[i];
      if (item.kind != Kind.String) {
        return Result.err<Array<string>>(ToolError.invalidParams("argument `" + name + "` must contain only strings, got " + item.typeName() + " entry"));
      }
      const s = item.s.trim();
      if (s.length > 0) out.push(s);
    }
    return Result.ok<Array<string>>(out);
  }

  /** The page size k: default 10, 1..50. */
  k(): Result<Value> {
    return this.optionalInt("k", 50, 10);
  }
}

// ---- host functions ---------------------------------------------------------

// @ts-ignore: decorator
@external("openhuman", "log")
declare function hostLog(level: i32, ptr: usize, len: i32): void;

export const LOG_DEBUG = 0;
export const LOG_INFO = 1;
export const LOG_WARN = 2;
export const LOG_ERROR = 3;

/** Writes one line to the host's log (rate-limited by the host; always linked). */
export function log(level: i32, msg: string): void {
  const b = String.UTF8.encode(msg);
  hostLog(level, changetype<usize>(b), b.byteLength);
}

/** The signature of every capability host function. */
export type HostFn = (ptr: usize, len: i32) => i64;

/** Calls a host function with request text; returns the reply text undecoded
 * ({"ok":…} or {"error":…}): for authors who bring their own JSON. */
export function callHostRaw(f: HostFn, req: string): string {
  const b = String.UTF8.encode(req);
  const packed = f(changetype<usize>(b), b.byteLength);
  const ptr = <usize>(<u64>packed >> 32);
  const len = <usize>(<u32>packed);
  const text = String.UTF8.decodeUnsafe(ptr, len);
  if (len > 0) heap.free(ptr); // an empty reply was not allocated (oh_alloc(0) answers 8)
  return text;
}

/** Calls host function name with a JSON request; returns the reply's ok value,
 * or its error as a ToolError the handler can return as is. */
export function callHost(name: string, f: HostFn, req: Value): Result<Value> {
  const b = String.UTF8.encode(req.toJSON());
  const packed = f(changetype<usize>(b), b.byteLength);
  const ptr = <usize>(<u64>packed >> 32);
  const len = <i32>(<u32>packed);
  const parsed = parseBytes(ptr, len);
  if (len > 0) heap.free(ptr);
  if (parsed.error != null) {
    return Result.err<Value>(ToolError.internal("host function " + name + " replied with " + parsed.error!.message()));
  }
  const v = parsed.value!;
  const ok = v.get("ok");
  if (ok != null) return Result.ok<Value>(ok);
  const e = v.get("error");
  if (e != null) return Result.err<Value>(new ToolError(e.strOf("code"), e.strOf("message")));
  return Result.err<Value>(ToolError.internal("host function " + name + " replied with neither ok nor error"));
}

// ---- the exports ------------------------------------------------------------

/** The module's oh_alloc: re-export it from the entry file
 * (`export { oh_alloc } from "…/assembly/index"`). Memory it returns is freed
 * by the SDK once read (requests, host replies). */
export function oh_alloc(size: i32): usize {
  if (size <= 0) return 8; // nothing is written: any in-bounds address will do
  return heap.alloc(<usize>size);
}

// The previous response stays referenced until the next call (the host copies
// it out first).
let lastOut: ArrayBuffer | null = null;

/** Serves one oh_call: decodes the request, runs the handler, encodes its
 * result or error. The entry file's oh_call returns serve(ptr, len, handler). */
export function serve(ptr: usize, len: i32, handler: (r: Request) => Result<Value>): i64 {
  const parsed = parseBytes(ptr, len);
  if (len > 0) heap.free(ptr);
  const resp = Value.object();
  if (parsed.error != null) {
    resp.set("error", ToolError.invalidParams("the call request is not valid JSON: " + parsed.error!.message()).toValue());
  } else {
    const v = parsed.value!;
    const r = new Request();
    r.tool = v.strOf("tool");
    r.client = v.strOf("client");
    r.requestId = v.strOf("request_id");
    const a = v.get("arguments");
    if (a != null && !a.isNull) r.arguments = a;
    const out = handler(r);
    if (out.error != null) {
      resp.set("error", out.error!.toValue());
    } else if (out.value == null || out.value!.kind != Kind.Object) {
      const got = out.value == null ? "nothing" : out.value!.typeName();
      resp.set("error", ToolError.internal("the tool returned " + (out.value == null ? got : "JSON of type " + got) + "; a result must be a JSON object").toValue());
    } else {
      resp.set("result", out.value!);
    }
  }
  const buf = String.UTF8.encode(resp.toJSON());
  lastOut = buf;
  return (<i64>changetype<usize>(buf) << 32) | <i64>buf.byteLength;
}

/** Reports an abort (a failed assertion, an out-of-bounds index) to the host
 * log, then traps: the call fails as internal and the instance is discarded.
 * build.sh links it with `--use abort=…/assembly/abi/abort`. */
export function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  let m = "abort: ";
  if (message != null) m += message;
  if (fileName != null) m += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  log(LOG_ERROR, m);
  unreachable();
}
