/*
 * memory — the first-party memory module (capability memory.read), in C like
 * examples/c-hello: it serves memory.search, memory.recall, tree.read_chunk,
 * tree.browse, tree.top_entities and tree.list_sources.
 *
 * It only dispatches on the tool: the whole oh_call request goes to the tool's host
 * function, which runs the tool on the host (argument checks and result shaping,
 * package firstparty; runtime/toolcall.go) and replies {"ok":<result>} or
 * {"error":{...}}; the module answers {"result":<result>} or the error unchanged.
 * Built by `go generate ./tools-wasm/...` (tools-wasm/gen), with the flags of the C
 * examples; oh_call, oh_alloc and the answer are in stub.h.
 */
#include "../stub.h"

static oh_u64 route(const oh_u8 *req, oh_u32 len, const oh_u8 *tool, oh_u32 n) {
	if (is(tool, n, "memory.search")) return oh_memory_search(req, len);
	if (is(tool, n, "memory.recall")) return oh_memory_recall(req, len);
	if (is(tool, n, "tree.read_chunk")) return oh_chunk_get(req, len);
	if (is(tool, n, "tree.browse")) return oh_chunks_list(req, len);
	if (is(tool, n, "tree.top_entities")) return oh_entities_top(req, len);
	if (is(tool, n, "tree.list_sources")) return oh_sources_list(req, len);
	return not_served(tool, n, "the memory module does not serve the tool \\\"",
		"\\\"; it serves memory.search, memory.recall, tree.read_chunk, tree.browse, tree.top_entities and tree.list_sources");
}
