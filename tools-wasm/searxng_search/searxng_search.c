/*
 * searxng_search — the first-party SearXNG module (capability web.searxng), in C
 * like examples/c-hello: it serves the one tool searxng_search.
 *
 * Its request goes whole to the host function searxng_search, which runs the tool on
 * the host (argument checks, the pinned HTTP route, parsing SearXNG's answer; package
 * firstparty, runtime/toolcall.go) and replies {"ok":<result>} or {"error":{...}}; the
 * module answers {"result":<result>} or the error unchanged (stub.h).
 */
#include "../stub.h"

static oh_u64 route(const oh_u8 *req, oh_u32 len, const oh_u8 *tool, oh_u32 n) {
	(void)tool;
	(void)n;
	return oh_searxng_search(req, len);
}
