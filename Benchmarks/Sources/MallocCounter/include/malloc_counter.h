// Counts calls to the C allocator, per thread, for the benchmark's "mallocs/msg" column.
//
// malloc_counter.c defines malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign in the
// benchmark executable itself. The executable's definitions come first in the dynamic linker's
// search order, so every allocation made by the process (Swift runtime, IMCodec, libprotobuf-c,
// swift-protobuf) goes through them; they bump a thread-local counter and forward to glibc's
// __libc_* entry points. free() is not counted.
#ifndef MALLOC_COUNTER_H
#define MALLOC_COUNTER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Allocation calls (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by the
/// calling thread since it started.
uint64_t malloc_counter_thread_count(void);

/// Whether the interposer is live: allocates once and checks that the count moved.
int malloc_counter_is_active(void);

#ifdef __cplusplus
}
#endif

#endif
