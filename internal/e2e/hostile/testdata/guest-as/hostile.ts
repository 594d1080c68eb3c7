// A hostile AssemblyScript guest: each call breaks the openhuman/1 ABI in the way
// its `try` argument names, below the SDK (raw exports, raw memory); `ok` serves
// normally through the SDK. The host must contain every attempt: the call fails,
// and the server and the next call carry on.
import { Request, Result, Value, parseBytes, serve } from "../../../../../sdk/assemblyscript/assembly/index";

// @ts-ignore: decorator
@external("openhuman", "sources_list")
declare function sources_list(ptr: usize, len: i32): i64;

// lie makes the next oh_alloc return an address outside linear memory.
let lie = false;

export function oh_alloc(size: i32): usize {
  if (lie) {
    lie = false;
    return 0xffffff00;
  }
  return heap.alloc(<usize>size);
}

function ok(r: Request): Result<Value> {
  return Result.ok<Value>(Value.object().setBool("ok", true));
}

function recurse(depth: i32): i32 {
  const a = new StaticArray<i32>(16);
  a[depth & 15] = depth;
  return recurse(depth + 1) + a[3];
}

let hold = new Array<string>();

export function oh_call(ptr: usize, len: i32): i64 {
  const parsed = parseBytes(ptr, len);
  let attempt = "";
  if (parsed.value != null) {
    const args = parsed.value!.get("arguments");
    if (args != null) attempt = args.strOf("try");
  }
  if (attempt == "result_out_of_bounds") return (<i64>0xffff0000 << 32) | 4096;
  if (attempt == "result_too_big") {
    const p = heap.alloc(2 << 20);
    memory.fill(p, 0x20, 2 << 20);
    return (<i64>p << 32) | (2 << 20);
  }
  if (attempt == "not_json") {
    const p = heap.alloc(4);
    store<u32>(p, 0x7b22feff);
    return (<i64>p << 32) | 4;
  }
  if (attempt == "request_out_of_bounds") return sources_list(0xffffff00, 4096);
  if (attempt == "request_huge") return sources_list(0, -1);
  if (attempt == "alloc_lies") {
    lie = true;
    const b = String.UTF8.encode("{}");
    return sources_list(changetype<usize>(b), 2);
  }
  if (attempt == "recurse") return recurse(0);
  if (attempt == "grow") {
    while (true) hold.push("x".repeat(1 << 20));
  }
  return serve(ptr, len, ok);
}
