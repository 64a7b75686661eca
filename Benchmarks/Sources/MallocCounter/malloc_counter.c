// See include/malloc_counter.h. Linux/glibc only: forwards to glibc's __libc_* allocator entry
// points, which glibc exports precisely so that a program can wrap malloc.
#include "malloc_counter.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

// initial-exec TLS in the executable: reading it never allocates (no __tls_get_addr).
static __thread uint64_t thread_count __attribute__((tls_model("initial-exec")));

__attribute__((visibility("default"))) void *malloc(size_t size) {
    thread_count++;
    return __libc_malloc(size);
}

__attribute__((visibility("default"))) void *calloc(size_t count, size_t size) {
    thread_count++;
    return __libc_calloc(count, size);
}

__attribute__((visibility("default"))) void *realloc(void *pointer, size_t size) {
    thread_count++;
    return __libc_realloc(pointer, size);
}

__attribute__((visibility("default"))) void free(void *pointer) {
    __libc_free(pointer);
}

__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t size) {
    thread_count++;
    return __libc_memalign(alignment, size);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size) {
    thread_count++;
    return __libc_memalign(alignment, size);
}

__attribute__((visibility("default"))) int posix_memalign(void **result, size_t alignment, size_t size) {
    thread_count++;
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL && size != 0) return ENOMEM;
    *result = pointer;
    return 0;
}

uint64_t malloc_counter_thread_count(void) { return thread_count; }

int malloc_counter_is_active(void) {
    // strdup allocates inside libc, through the dynamic symbol: it counts only when interposed.
    uint64_t before = thread_count;
    char *volatile p = strdup("malloc counter");
    free(p);
    return thread_count != before;
}
