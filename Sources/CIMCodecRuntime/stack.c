// imcodec_stack_bytes_left (see imcodec_stack.h). The stack grows down on every platform IMCodec
// builds for, so what is left is the distance from a local of this frame to the stack's low end.
#if defined(__linux__)
#define _GNU_SOURCE  // pthread_getattr_np
#endif
#include "imcodec_stack.h"

#include <pthread.h>
#include <stdint.h>

long long imcodec_stack_bytes_left(void) {
    // The frame's address, not a local's: with AddressSanitizer's detect_stack_use_after_return,
    // locals live on a fake stack in the heap.
    const uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t low;
#if defined(__APPLE__)
    const uintptr_t top = (uintptr_t)pthread_get_stackaddr_np(pthread_self());
    low = top - (uintptr_t)pthread_get_stacksize_np(pthread_self());
#elif defined(__linux__)
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) {
        return -1;
    }
    void *address = NULL;
    size_t size = 0;
    const int status = pthread_attr_getstack(&attributes, &address, &size);
    pthread_attr_destroy(&attributes);
    if (status != 0 || address == NULL) {
        return -1;
    }
    low = (uintptr_t)address;
#else
    return -1;
#endif
    return here > low ? (long long)(here - low) : 0;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IMCODEC_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IMCODEC_SANITIZED 1
#endif

int imcodec_stack_scale(void) {
#if defined(IMCODEC_SANITIZED)
    return 4;
#else
    return 1;
#endif
}
