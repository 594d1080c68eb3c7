/* Tries to open a file through WASI path_open. */
#include "hostile.h"

IMPORT("wasi_snapshot_preview1", "path_open")
int path_open(int fd, int dirflags, const char *path, int path_len, int oflags,
              u64 rights_base, u64 rights_inheriting, int fdflags, int *opened_fd);

EXPORT("oh_call") u64 oh_call(u32 ptr, u32 len) {
	int fd = -1;
	path_open(3, 0, "/etc/passwd", 11, 0, ~0ull, ~0ull, 0, &fd);
	return pack(ok_result, sizeof ok_result - 1);
}
