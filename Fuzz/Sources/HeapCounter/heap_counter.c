// See include/heap_counter.h.
#include "heap_counter.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);
extern size_t malloc_usable_size(void *pointer);

static long long live;
static long long peak;

static inline void add(void *pointer) {
    if (pointer == NULL) {
        return;
    }
    const long long now = __atomic_add_fetch(&live, (long long)malloc_usable_size(pointer), __ATOMIC_RELAXED);
    long long seen = __atomic_load_n(&peak, __ATOMIC_RELAXED);
    while (now > seen && !__atomic_compare_exchange_n(&peak, &seen, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static inline void sub(void *pointer) {
    if (pointer != NULL) {
        __atomic_sub_fetch(&live, (long long)malloc_usable_size(pointer), __ATOMIC_RELAXED);
    }
}

__attribute__((visibility("default"))) void *malloc(size_t size) {
    void *p = __libc_malloc(size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) void *calloc(size_t count, size_t size) {
    void *p = __libc_calloc(count, size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) void *realloc(void *pointer, size_t size) {
    const size_t old = pointer != NULL ? malloc_usable_size(pointer) : 0;
    void *p = __libc_realloc(pointer, size);
    if (p != NULL || size == 0) {
        __atomic_sub_fetch(&live, (long long)old, __ATOMIC_RELAXED);
        add(p);
    }
    return p;
}

__attribute__((visibility("default"))) void free(void *pointer) {
    sub(pointer);
    __libc_free(pointer);
}

__attribute__((visibility("default"))) void *memalign(size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) {
        return EINVAL;
    }
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) {
        return ENOMEM;
    }
    add(p);
    *result = p;
    return 0;
}

long long heap_counter_live(void) { return __atomic_load_n(&live, __ATOMIC_RELAXED); }

long long heap_counter_peak(void) { return __atomic_load_n(&peak, __ATOMIC_RELAXED); }

void heap_counter_reset_peak(void) { __atomic_store_n(&peak, heap_counter_live(), __ATOMIC_RELAXED); }

int heap_counter_is_active(void) {
    // strdup allocates inside libc through the dynamic symbol: it counts only when interposed.
    const long long before = heap_counter_live();
    char *volatile p = strdup("heap counter");
    const long long during = heap_counter_live();
    free(p);
    return during != before;
}
