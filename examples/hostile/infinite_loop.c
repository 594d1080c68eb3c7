/* Spins forever inside oh_call. */
#include "hostile.h"

EXPORT("oh_call") u64 oh_call(u32 ptr, u32 len) {
	volatile u32 n = 0;
	for (;;) {
		n++;
	}
	return 0;
}
