/* A C guest against openhuman.h: every call forwards {"query":"phoenix","k":3} to
 * memory_search and returns the host's reply as the result (or its error as the
 * error), and logs one line. Used by header_test.go. */
#include "../openhuman.h"

OH_BUMP_ALLOCATOR(64 * 1024)

static const char search_req[] = "{\"query\":\"phoenix\",\"k\":3}";

static oh_u32 copy(oh_u8 *dst, const oh_u8 *src, oh_u32 n) {
	for (oh_u32 i = 0; i < n; i++) dst[i] = src[i];
	return n;
}

oh_u64 oh_call(oh_u8 *req, oh_u32 len) {
	(void)req;
	(void)len;
	oh_log_str(OH_LOG_INFO, "echo_search: calling memory_search");
	oh_u64 reply = oh_memory_search((const oh_u8 *)search_req, sizeof search_req - 1);
	oh_u8 *r = OH_PTR(reply);
	oh_u32 n = OH_LEN(reply);
	/* The reply is {"ok":X} or {"error":X}; answer {"result":X} or {"error":X}. */
	static const char ok[] = "{\"ok\":";
	int is_ok = n > 6;
	for (oh_u32 i = 0; is_ok && i < 6; i++) is_ok = r[i] == (oh_u8)ok[i];
	const char *head = is_ok ? "{\"result\":" : "{\"error\":";
	oh_u32 skip = is_ok ? 6 : 9;
	oh_u32 hl = oh_strlen(head);
	oh_u8 *out = oh_alloc(hl + n - skip);
	oh_u32 at = copy(out, (const oh_u8 *)head, hl);
	at += copy(out + at, r + skip, n - skip);
	return OH_PACK(out, at);
}
