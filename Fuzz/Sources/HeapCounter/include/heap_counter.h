// Live heap bytes and their peak, for the heap probe: this target defines malloc, free and the
// rest, forwarding to glibc's __libc_* entry points (which glibc exports so that a program can wrap
// its allocator) and counting malloc_usable_size of every block. Linux/glibc only.
#ifndef HEAP_COUNTER_H
#define HEAP_COUNTER_H

/// Bytes allocated and not freed (usable sizes).
long long heap_counter_live(void);

/// The highest heap_counter_live() since the last heap_counter_reset_peak().
long long heap_counter_peak(void);

/// Makes the peak the current live bytes.
void heap_counter_reset_peak(void);

/// Whether the counter sees allocations (it does when this object is linked into the executable).
int heap_counter_is_active(void);

#endif
