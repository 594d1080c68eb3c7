/*
 * stub.h — what the first-party modules share (tools-wasm/memory/memory.c,
 * tools-wasm/searxng_search/searxng_search.c): an allocator, oh_call, and turning a
 * host reply into the call's answer. Each module defines
 *
 *   static oh_u64 route(const oh_u8 *req, oh_u32 len, const oh_u8 *tool, oh_u32 n);
 *
 * which passes the oh_call request (req, len) to the host function of the tool named
 * by tool[0:n] and returns that function's packed reply. The host writes every reply
 * through oh_alloc, so a reply {"ok":X} becomes the answer {"result":X} in place: the
 * allocator keeps 16 bytes free before every block and "{\"result\":" is written over
 * "{\"ok\":" from four bytes earlier. An {"error":{...}} reply is the answer as it is.
 * Nothing here calls the host outside oh_call (oh_alloc only grows the memory).
 */
#include "openhuman.h"

extern oh_u8 __heap_base;

/* top is the end of the last block handed out; 0 means none since the last call. */
static oh_u32 top;

#define HEADROOM 16u

OH_EXPORT("oh_alloc") oh_u8 *oh_alloc(oh_u32 size) {
	oh_u32 base = (oh_u32)(unsigned long)&__heap_base;
	oh_u64 at = ((oh_u64)(top > base ? top : base) + 15u) / 16u * 16u + HEADROOM;
	oh_u64 end = at + size;
	oh_u64 have = (oh_u64)__builtin_wasm_memory_size(0) * 65536u;
	if (end > 0xffff0000u) return (oh_u8 *)0;
	if (end > have && __builtin_wasm_memory_grow(0, (unsigned long)((end - have + 65535u) / 65536u)) == (unsigned long)-1)
		return (oh_u8 *)0;
	top = (oh_u32)end;
	return (oh_u8 *)(unsigned long)at;
}

static int is(const oh_u8 *s, oh_u32 n, const char *want) {
	oh_u32 i = 0;
	for (; i < n; i++)
		if (want[i] == 0 || (oh_u8)want[i] != s[i]) return 0;
	return want[i] == 0;
}

static oh_u8 msg[512];

/* not_served answers a tool the module does not serve: not_found, naming it. */
__attribute__((unused)) static oh_u64 not_served(const oh_u8 *tool, oh_u32 n, const char *before, const char *after) {
	/* before and after are JSON string content (quotes escaped); the name is made safe. */
	oh_u32 k = 0;
	const char *parts[] = {"{\"error\":{\"code\":\"" OH_CODE_NOT_FOUND "\",\"message\":\"", before, 0, after, "\"}}"};
	for (int p = 0; p < 5; p++) {
		if (p == 2) {
			for (oh_u32 i = 0; i < n && i < 64 && k < sizeof msg; i++) {
				oh_u8 c = tool[i];
				if (c == '"' || c == '\\' || c < 0x20) c = '?';
				msg[k++] = c;
			}
			continue;
		}
		for (const char *s = parts[p]; *s && k < sizeof msg; s++) msg[k++] = (oh_u8)*s;
	}
	return OH_PACK(msg, k);
}

static oh_u64 route(const oh_u8 *req, oh_u32 len, const oh_u8 *tool, oh_u32 n);

static const char bad_request[] = "{\"error\":{\"code\":\"" OH_CODE_INTERNAL "\",\"message\":\"the host sent a request that is not an openhuman/1 call request\"}}";
static const char bad_reply[] = "{\"error\":{\"code\":\"" OH_CODE_INTERNAL "\",\"message\":\"the host function returned a reply outside the buffers this module allocated\"}}";

OH_EXPORT("oh_call") oh_u64 oh_call(oh_u8 *req, oh_u32 len) {
	/* The request starts {"tool":"<name>", as the host encodes it. */
	static const char head[] = "{\"tool\":\"";
	oh_u32 h = sizeof head - 1, end = h;
	if (len < h || !is(req, h, head)) return OH_PACK(bad_request, sizeof bad_request - 1);
	while (end < len && req[end] != '"' && req[end] != '\\') end++;
	if (end >= len || req[end] != '"') return OH_PACK(bad_request, sizeof bad_request - 1);

	oh_u64 r = route(req, len, req + h, end - h);
	oh_u8 *p = OH_PTR(r);
	oh_u32 n = OH_LEN(r);
	oh_u32 base = (oh_u32)(unsigned long)&__heap_base;
	top = 0; /* the next call starts the arena again; this answer is copied out first */
	if ((oh_u8 *)msg <= p && p < (oh_u8 *)msg + sizeof msg) return r; /* not_served */
	if ((oh_u32)(unsigned long)p < base + HEADROOM) return OH_PACK(bad_reply, sizeof bad_reply - 1);
	static const char ok[] = "{\"ok\":";
	if (n > sizeof ok && is(p, sizeof ok - 1, ok)) {
		static const char result[] = "{\"result\":";
		oh_u8 *at = p - (sizeof result - sizeof ok);
		for (oh_u32 i = 0; i < sizeof result - 1; i++) at[i] = (oh_u8)result[i];
		return OH_PACK(at, n + (sizeof result - sizeof ok));
	}
	return r;
}
