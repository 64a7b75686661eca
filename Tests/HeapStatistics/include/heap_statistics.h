// The C allocator's own statistics, for imcodec-heap-probe (Tests/HeapProbe): test-only, never
// linked into the library. Unlike Fuzz/Sources/HeapCounter it does not interpose malloc, so it is
// harmless in any process, sanitizers included.
#ifndef HEAP_STATISTICS_H
#define HEAP_STATISTICS_H

/// Bytes the C allocator has handed out and not taken back (glibc: mallinfo2's uordblks + hblkhd),
/// or -1 where that is not known (another C library, or a sanitizer's allocator).
long long heap_statistics_bytes_in_use(void);

#endif
