#ifndef FUZZ_SUPPORT_H
#define FUZZ_SUPPORT_H

/// Bytes the sanitizer allocator has handed out and not taken back, or -1 without a sanitizer.
long long fuzz_allocated_bytes(void);

#endif
