/*
 * c.hello — a complete openhuman-core tool in C, with no libc and no WASI: it greets
 * the caller and says how many sources the memory tree holds (host function
 * sources_list, capability memory.read).
 *
 *   clang --target=wasm32-wasi -nostdlib -O2 -mbulk-memory -I../../sdk \
 *         -Wl,--no-entry -Wl,--export-dynamic -Wl,--strip-all -o hello.raw.wasm hello.c
 *   openhuman-core tools pack hello.raw.wasm --manifest hello.toml -o hello.wasm
 */
#include "openhuman.h"

OH_BUMP_ALLOCATOR(256 * 1024)

static oh_u8 out[4096];
static oh_u32 out_len;

static void put(const char *s, oh_u32 n) {
	for (oh_u32 i = 0; i < n && out_len < sizeof out; i++) out[out_len++] = (oh_u8)s[i];
}
static void puts_(const char *s) { put(s, oh_strlen(s)); }
static void put_uint(oh_u32 v) {
	char digits[10];
	int n = 0;
	do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v);
	while (n) put(&digits[--n], 1);
}

/* find returns the offset just after the first occurrence of pat in buf[0:len], or -1. */
static long find(const oh_u8 *buf, oh_u32 len, const char *pat, oh_u32 from) {
	oh_u32 m = oh_strlen(pat);
	for (oh_u32 i = from; i + m <= len; i++) {
		oh_u32 j = 0;
		while (j < m && buf[i + j] == (oh_u8)pat[j]) j++;
		if (j == m) return (long)(i + m);
	}
	return -1;
}

static oh_u64 error(const char *code, const char *msg) {
	out_len = 0;
	puts_("{\"error\":{\"code\":\"");
	puts_(code);
	puts_("\",\"message\":\"");
	puts_(msg);
	puts_("\"}}");
	return OH_PACK(out, out_len);
}

OH_EXPORT("oh_call") oh_u64 oh_call(oh_u8 *req, oh_u32 len) {
	/* The optional "name" argument: a plain string of letters, digits, spaces, '-', '.'. */
	const oh_u8 *name = (const oh_u8 *)"there";
	oh_u32 name_len = 5;
	long args = find(req, len, "\"arguments\":", 0);
	if (args >= 0) {
		long at = find(req, len, "\"name\":\"", (oh_u32)args);
		if (at >= 0) {
			oh_u32 i = (oh_u32)at;
			while (i < len && req[i] != '"') {
				oh_u8 c = req[i];
				int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ' || c == '-' || c == '.';
				if (!ok) return error(OH_CODE_INVALID_PARAMS, "argument `name` may contain only letters, digits, spaces, '-' and '.'");
				i++;
			}
			if (i - (oh_u32)at > 64) return error(OH_CODE_INVALID_PARAMS, "argument `name` must be at most 64 characters");
			if (i > (oh_u32)at) {
				name = req + at;
				name_len = i - (oh_u32)at;
			}
		}
	}

	static const char q[] = "{}";
	oh_u64 r = oh_sources_list((const oh_u8 *)q, sizeof q - 1);
	const oh_u8 *reply = OH_PTR(r);
	oh_u32 reply_len = OH_LEN(r);
	if (find(reply, reply_len, "{\"error\":", 0) == 9) {
		/* Pass the host's error on unchanged: {"error":{...}}. */
		out_len = 0;
		put((const char *)reply, reply_len);
		return OH_PACK(out, out_len);
	}
	oh_u32 sources = 0;
	for (long at = find(reply, reply_len, "\"source_id\":", 0); at >= 0; at = find(reply, reply_len, "\"source_id\":", (oh_u32)at)) sources++;

	oh_log_str(OH_LOG_DEBUG, "c.hello answered");
	out_len = 0;
	puts_("{\"result\":{\"greeting\":\"Hello, ");
	put((const char *)name, name_len);
	puts_("! Your memory tree has ");
	put_uint(sources);
	puts_(sources == 1 ? " source.\",\"sources\":" : " sources.\",\"sources\":");
	put_uint(sources);
	puts_("}}");
	return OH_PACK(out, out_len);
}
