/*
 * openhuman.h — the "openhuman/1" tool ABI of openhuman-core, for C (and anything
 * that compiles to wasm32 with clang). Needs no libc and no WASI.
 *
 * BUILD
 *   clang --target=wasm32-wasi -nostdlib -O2 -mbulk-memory \
 *         -Wl,--no-entry -Wl,--export-dynamic -Wl,--strip-all \
 *         -o tool.wasm tool.c
 *   openhuman-core tools pack tool.wasm --manifest tool.toml -o tool.packed.wasm
 * -mbulk-memory lets clang turn the memcpy/memset it emits for copy loops and struct
 * copies into wasm memory.copy/memory.fill instructions; without it, and without a
 * libc, such code fails to link with "undefined symbol: memcpy".
 *
 * WHAT A MODULE EXPORTS (define these; the prototypes below carry the export names)
 *   memory                                  the linear memory (wasm-ld exports it)
 *   oh_alloc(size i32) -> i32               return `size` writable bytes. The host writes
 *                                           every request and every host-function reply
 *                                           into memory obtained here, so it must work
 *                                           while a host function is running (re-entrant).
 *                                           Memory returned must stay untouched by the
 *                                           module until it has read what the host wrote.
 *   oh_call(ptr i32, len i32) -> i64        one tool invocation; see REQUEST/RESPONSE.
 *                                           Returns OH_PACK(out_ptr, out_len); the output
 *                                           must stay valid until the next call into the
 *                                           module (the host copies it out first).
 *   _initialize()                           optional; run once per instance when present
 *                                           (reactors built with wasi-libc have it).
 *
 * REQUEST (JSON, UTF-8, at ptr/len passed to oh_call, in a buffer from oh_alloc)
 *   {"tool":"my.tool","arguments":{...},"client":"mcp:claude-desktop","request_id":"..."}
 *   `arguments` is the caller's JSON object (it may be {} or absent). A module that
 *   serves several tools dispatches on `tool`.
 *
 * RESPONSE (JSON written by oh_call) — exactly one of:
 *   {"result":{...}}                        a JSON object; it must match the tool's
 *                                           output_schema in the manifest
 *   {"error":{"code":"invalid_params","message":"argument `k` must not exceed 50 (got 51)"}}
 *   Codes: invalid_params (bad arguments: say which and why), not_found, unavailable
 *   (a dependency failed), internal (a bug). A trap is reported as internal and the
 *   instance is discarded. Results and requests are capped at 1 MiB.
 *
 * HOST FUNCTIONS (import module "openhuman"; each (req_ptr i32, req_len i32) -> i64)
 *   The module passes a JSON request; the host allocates the reply with the module's
 *   oh_alloc, writes it, and returns OH_PACK(reply_ptr, reply_len). The reply is
 *     {"ok":{...}}  or  {"error":{"code":"...","message":"..."}}
 *   and the module owns that memory afterwards. A host error can be returned to the
 *   caller as-is: {"error": <the same object>}.
 *
 *   capability memory.read  (request JSON -> "ok" JSON)
 *     memory_search   {"query":"phoenix","k":10}      -> {"chunks":[hit...],"message_text_max_chars"?,"omitted"?,"hint"?}
 *     memory_recall   {"query":"...","k":10}          -> {"chunks":[hit...],"mode":"lexical|hybrid|semantic",
 *                                                          "message_text_max_chars"?,"omitted"?,"note"?}
 *     chunk_get       {"id":"<32 hex>"}               -> {"chunk":{id,source_kind,source_id,text,...}}
 *     chunks_list     {"source_kinds"?,"source_ids"?,"entity_ids"?,"since_ms"?,"until_ms"?,
 *                      "query"?,"k":10,"offset"?}      -> {"chunks":[hit...],"total":N,"next"?}
 *     entities_top    {"kind"?,"k":10,"offset"?}      -> {"entities":[{entity_id,kind,surface,count,last_seen_ms}],"total":N,"next"?}
 *     sources_list    {"kinds"?,"query"?,"k"?,"offset"?,"user_email_hint"?}
 *                                                     -> {"sources":[{source_kind,source_id,display_name,chunk_count,...}],"total":N,"next"?}
 *   Lists are pages: k is 1..50 (sources_list: 0 or absent = 50), "next" is the offset of
 *   the following page (absent after the last); array filters hold at most 100 values.
 *   Every result stays under 1 MiB by construction.
 *   capability web.searxng
 *     searxng_search  {"query":"...","categories"?:["general","news","images"],
 *                      "language"?,"max_results"?}    -> {"status":200,"max_results":10,"body":"<raw SearXNG JSON>"}
 *   always
 *     log(level i32, ptr i32, len i32)        a UTF-8 line to the host log (rate-limited)
 *
 *   Hit shape: {id, source_kind, source_id, source_ref?, source_refs?, title?, timestamp_ms,
 *   snippet, score?, seq, tags?, messages?}; a search/recall hit's messages are its cited
 *   messages [{ref, author?, time? (RFC 3339, UTC), time_precision? (ms|minute|day), text,
 *   truncated?}]. The Go types in sdk/abi/abi.go are the reference for every shape.
 *
 * CAPABILITIES AND THE STATIC GATE
 *   A module may import only the functions of the capabilities its manifest requests
 *   (capabilities = ["memory.read"] ...) and the policy grants, plus `log`. The host
 *   refuses, before instantiation, a module with any other import — including WASI
 *   calls beyond the basics and made-up names — and names each offending import.
 *   Only functions you CALL become imports, so declaring all of them here is harmless.
 *
 * MANIFEST (tool.toml, packed into the "openhuman.manifest" custom section)
 *   abi = "openhuman/1"
 *   capabilities = ["memory.read"]
 *   [[tool]]
 *   name = "my.tool"
 *   title = "My Tool"
 *   description = "What it does and when a model should use it."
 *   export = "oh_call"
 *   input_schema = '''{"type":"object","properties":{...},"additionalProperties":false}'''
 *   output_schema = '''{"type":"object","properties":{...}}'''
 *   annotations = { readOnlyHint = true, openWorldHint = false }
 *   [limits]
 *   timeout_ms = 10000
 *   memory_mib = 32
 */
#ifndef OPENHUMAN_H
#define OPENHUMAN_H

#define OH_ABI_VERSION "openhuman/1"

typedef unsigned char oh_u8;
typedef int oh_i32;
typedef unsigned int oh_u32;
typedef unsigned long long oh_u64;

/* Attribute macros: a function exported from the module / imported from the host. */
#define OH_EXPORT(name) __attribute__((export_name(name)))
#define OH_IMPORT(name) __attribute__((import_module("openhuman"), import_name(name)))

/* Pack and unpack the (pointer, length) pairs that oh_call and host functions return. */
#define OH_PACK(ptr, len) ((((oh_u64)(unsigned long)(ptr)) << 32) | (oh_u64)(oh_u32)(len))
#define OH_PTR(packed) ((oh_u8 *)(unsigned long)(oh_u32)((oh_u64)(packed) >> 32))
#define OH_LEN(packed) ((oh_u32)((oh_u64)(packed) & 0xffffffffu))

/* Log levels for oh_log. */
#define OH_LOG_DEBUG 0
#define OH_LOG_INFO 1
#define OH_LOG_WARN 2
#define OH_LOG_ERROR 3

/* Error codes for {"error":{"code":...}}. */
#define OH_CODE_INVALID_PARAMS "invalid_params"
#define OH_CODE_NOT_FOUND "not_found"
#define OH_CODE_UNAVAILABLE "unavailable"
#define OH_CODE_INTERNAL "internal"

/* Capability names for the manifest. */
#define OH_CAP_MEMORY_READ "memory.read"
#define OH_CAP_WEB_SEARXNG "web.searxng"

/* ---- exports the module defines ---------------------------------------------- */

/* Return `size` bytes the host may write into (must work during a host call). */
OH_EXPORT("oh_alloc") oh_u8 *oh_alloc(oh_u32 size);

/* Serve one call: read the request at req/len, return OH_PACK(out, out_len). */
OH_EXPORT("oh_call") oh_u64 oh_call(oh_u8 *req, oh_u32 len);

/* ---- host functions: capability memory.read ----------------------------------- */

OH_IMPORT("memory_search") oh_u64 oh_memory_search(const oh_u8 *req, oh_u32 len);
OH_IMPORT("memory_recall") oh_u64 oh_memory_recall(const oh_u8 *req, oh_u32 len);
OH_IMPORT("chunk_get") oh_u64 oh_chunk_get(const oh_u8 *req, oh_u32 len);
OH_IMPORT("chunks_list") oh_u64 oh_chunks_list(const oh_u8 *req, oh_u32 len);
OH_IMPORT("entities_top") oh_u64 oh_entities_top(const oh_u8 *req, oh_u32 len);
OH_IMPORT("sources_list") oh_u64 oh_sources_list(const oh_u8 *req, oh_u32 len);

/* ---- host functions: capability web.searxng ----------------------------------- */

OH_IMPORT("searxng_search") oh_u64 oh_searxng_search(const oh_u8 *req, oh_u32 len);

/* ---- host functions: always linked -------------------------------------------- */

OH_IMPORT("log") void oh_log(oh_i32 level, const oh_u8 *msg, oh_u32 len);

/* Length of a NUL-terminated string (no libc needed). */
static inline oh_u32 oh_strlen(const char *s) {
	oh_u32 n = 0;
	while (s[n]) n++;
	return n;
}

/* Log a NUL-terminated string. */
static inline void oh_log_str(oh_i32 level, const char *msg) {
	oh_log(level, (const oh_u8 *)msg, oh_strlen(msg));
}

/*
 * OH_BUMP_ALLOCATOR(bytes) defines oh_alloc over a static arena of `bytes` bytes. It
 * hands out memory linearly (16-byte aligned) and wraps to the start when the arena is
 * full; nothing is freed, so a buffer stays valid until `bytes` further bytes have been
 * allocated. Size the arena to hold everything one call uses — request, host replies,
 * output — twice over (requests, replies and results are each at most 1 MiB). A size
 * larger than the arena returns 0, which the host treats as a failed allocation.
 * Usage, at file scope:  OH_BUMP_ALLOCATOR(256 * 1024)
 */
#define OH_BUMP_ALLOCATOR(bytes)                                              \
	static oh_u8 oh_arena_[(bytes)] __attribute__((aligned(16)));          \
	static oh_u32 oh_arena_top_;                                          \
	OH_EXPORT("oh_alloc") oh_u8 *oh_alloc(oh_u32 size) {                  \
		oh_u32 at = (oh_arena_top_ + 15u) & ~15u;                          \
		if (size > sizeof oh_arena_) return (oh_u8 *)0;                   \
		if (at > sizeof oh_arena_ - size) at = 0;                          \
		oh_arena_top_ = at + size;                                        \
		return &oh_arena_[at];                                            \
	}

#endif /* OPENHUMAN_H */
