/* Returns a 10 MB result (well-formed JSON), past the 1 MiB result cap. */
#include "hostile.h"

/* clang turns the fill loop into a memset call; -nostdlib has none. */
void *memset(void *d, int c, unsigned long n) {
	volatile unsigned char *p = d;
	while (n--) *p++ = (unsigned char)c;
	return d;
}

#define PAGE 65536u
#define SIZE (10u * 1024u * 1024u)

EXPORT("oh_call") u64 oh_call(u32 ptr, u32 len) {
	u32 pages = SIZE / PAGE + 1;
	unsigned long old = __builtin_wasm_memory_grow(0, pages);
	if (old == (unsigned long)-1) {
		__builtin_trap();
	}
	unsigned char *out = (unsigned char *)(old * PAGE);
	static const char head[] = "{\"result\":{\"padding\":\"";
	static const char tail[] = "\"}}";
	u32 i = 0;
	for (u32 j = 0; j < sizeof head - 1; j++) out[i++] = head[j];
	while (i < SIZE - (sizeof tail - 1)) out[i++] = 'A';
	for (u32 j = 0; j < sizeof tail - 1; j++) out[i++] = tail[j];
	return pack(out, SIZE);
}
