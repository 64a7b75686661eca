// The test-only allocation counter: one malloc interposer for the benchmark's mallocs/msg column
// (Benchmarks/) and the heap probe's live and peak bytes (imcodec-heap-probe, Tests/HeapProbe).
//
// allocation_counter.c defines malloc, calloc, realloc, free, memalign, aligned_alloc and
// posix_memalign in the executable that links it; the executable's definitions come first in the
// dynamic linker's search order, so every allocation of the process (Swift runtime, IMCodec,
// libprotobuf-c, swift-protobuf) goes through them. They count the calling thread's allocation
// calls (a thread-local counter, never an atomic) and, unless allocation_counter_track_bytes(0)
// turned it off, the process's live bytes (malloc_usable_size of each block) and their peak. Then they forward to glibc's __libc_* entry points, which glibc exports so that a
// program can wrap its allocator. Linux/glibc only.
//
// Link it only into an executable made for measuring (it is the IMCodecAllocationCounter product,
// test-only): never into the library or a test bundle. Under AddressSanitizer or ThreadSanitizer it
// defines nothing (the sanitizer owns the allocator) and allocation_counter_is_active() returns 0.
#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Allocation calls (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) made by the
/// calling thread since it started. free() is not counted.
uint64_t allocation_counter_thread_calls(void);

/// Stops (0) or restarts (1) counting live bytes and their peak. On from the start of the process, so
/// that every block freed was counted when it was allocated; the benchmark turns it off, so that its
/// timed loops pay for a thread-local increment only.
void allocation_counter_track_bytes(int on);

/// Bytes allocated and not freed (usable sizes), while tracking is on.
long long allocation_counter_live_bytes(void);

/// The highest allocation_counter_live_bytes() since the last allocation_counter_reset_peak().
long long allocation_counter_peak_bytes(void);

/// Makes the peak the current live bytes.
void allocation_counter_reset_peak(void);

/// Whether the interposer is live in this process: allocates once and checks that the call count
/// moved.
int allocation_counter_is_active(void);

#ifdef __cplusplus
}
#endif

#endif
