// The openhuman-core guest SDK for AssemblyScript. An entry file re-exports
// oh_alloc, defines oh_call around a handler, and builds with
//   asc tool.ts -o tool.wasm -O3z --runtime incremental --use abort=<sdk>/assembly/abi/abort
// (build.sh of `openhuman-core tools new NAME --lang as`). Host functions are in
// the memory (capability memory.read) and searxng (web.searxng) namespaces; only
// those a module calls become its imports.

export { Kind, Value, Parsed, ParseError, parse, parseBytes, quote } from "./json";
export { ABI_VERSION, ToolError, Result, Request, Args, log, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, callHost, callHostRaw, oh_alloc, serve, abort } from "./abi";
import * as memory from "./memory";
import * as searxng from "./searxng";
export { memory, searxng };
