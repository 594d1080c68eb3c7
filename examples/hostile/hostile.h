/* Shared scaffolding of the deliberately hostile example modules: a bump allocator
 * for oh_alloc and the attribute macros. Built with Debian's clang:
 *   clang --target=wasm32-wasi -nostdlib -O2 -Wl,--no-entry -Wl,--export-dynamic -Wl,--strip-all
 */
#ifndef HOSTILE_H
#define HOSTILE_H

typedef unsigned int u32;
typedef unsigned long long u64;

#define IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

static unsigned char heap[64 * 1024];
static u32 heap_top;

EXPORT("oh_alloc") u32 oh_alloc(u32 size) {
	u32 at = (heap_top + 7u) & ~7u;
	if (size > sizeof heap || at > sizeof heap - size) {
		heap_top = 0; /* reuse from the start: requests are short-lived */
		at = 0;
	}
	heap_top = at + size;
	return (u32)(unsigned long)&heap[at];
}

static u64 pack(const void *p, u32 n) { return ((u64)(unsigned long)p << 32) | n; }

static const char ok_result[] = "{\"result\":{\"ok\":true}}";

#endif
