/* Grows its memory one page at a time without bound; when the host refuses, it traps (as a Go runtime out of memory does). */
#include "hostile.h"

EXPORT("oh_call") u64 oh_call(u32 ptr, u32 len) {
	for (;;) {
		if (__builtin_wasm_memory_grow(0, 1) == (unsigned long)-1) {
			__builtin_trap();
		}
	}
	return 0;
}
