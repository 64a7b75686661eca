// See include/allocation_counter.h.
#include "allocation_counter.h"

#include <errno.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#ifndef __has_feature
#define __has_feature(feature) 0
#endif
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || defined(__SANITIZE_ADDRESS__) \
    || defined(__SANITIZE_THREAD__)
#define ALLOCATION_COUNTER_INTERPOSES 0
#else
#define ALLOCATION_COUNTER_INTERPOSES 1
#endif

// initial-exec TLS in the executable: reading it never allocates (no __tls_get_addr).
static __thread uint64_t thread_calls __attribute__((tls_model("initial-exec")));
static int tracking = 1;
static long long live;
static long long peak;

#if ALLOCATION_COUNTER_INTERPOSES
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);
extern size_t malloc_usable_size(void *pointer);

static inline int is_tracking(void) { return __atomic_load_n(&tracking, __ATOMIC_RELAXED); }

static inline void add(void *pointer) {
    if (pointer == NULL || !is_tracking()) {
        return;
    }
    const long long now = __atomic_add_fetch(&live, (long long)malloc_usable_size(pointer), __ATOMIC_RELAXED);
    long long seen = __atomic_load_n(&peak, __ATOMIC_RELAXED);
    while (now > seen && !__atomic_compare_exchange_n(&peak, &seen, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static inline void sub(void *pointer) {
    if (pointer != NULL && is_tracking()) {
        __atomic_sub_fetch(&live, (long long)malloc_usable_size(pointer), __ATOMIC_RELAXED);
    }
}

__attribute__((visibility("default"))) void *malloc(size_t size) {
    thread_calls++;
    void *p = __libc_malloc(size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) void *calloc(size_t count, size_t size) {
    thread_calls++;
    void *p = __libc_calloc(count, size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) void *realloc(void *pointer, size_t size) {
    thread_calls++;
    const int track = is_tracking();
    const size_t old = track && pointer != NULL ? malloc_usable_size(pointer) : 0;
    void *p = __libc_realloc(pointer, size);
    if (track && (p != NULL || size == 0)) {
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
    thread_calls++;
    void *p = __libc_memalign(alignment, size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t alignment, size_t size) {
    thread_calls++;
    void *p = __libc_memalign(alignment, size);
    add(p);
    return p;
}

__attribute__((visibility("default"))) int posix_memalign(void **result, size_t alignment, size_t size) {
    thread_calls++;
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
#endif

uint64_t allocation_counter_thread_calls(void) { return thread_calls; }

void allocation_counter_track_bytes(int on) { __atomic_store_n(&tracking, on != 0, __ATOMIC_RELAXED); }

long long allocation_counter_live_bytes(void) { return __atomic_load_n(&live, __ATOMIC_RELAXED); }

long long allocation_counter_peak_bytes(void) { return __atomic_load_n(&peak, __ATOMIC_RELAXED); }

void allocation_counter_reset_peak(void) {
    __atomic_store_n(&peak, allocation_counter_live_bytes(), __ATOMIC_RELAXED);
}

int allocation_counter_is_active(void) {
    // strdup allocates inside libc, through the dynamic symbol: it counts only when interposed. The
    // counter is read through a volatile access: the compiler knows strdup's semantics and would
    // otherwise fold the two reads into one (and the check into "not interposed").
    const volatile uint64_t *calls = &thread_calls;
    const uint64_t before = *calls;
    char *volatile p = strdup("allocation counter");
    const uint64_t after = *calls;
    free(p);
    return after != before;
}
