#include "fuzz_support.h"

#include <stddef.h>

// Defined by the AddressSanitizer runtime (sanitizer/allocator_interface.h); absent otherwise.
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

long long fuzz_allocated_bytes(void) {
    if (__sanitizer_get_current_allocated_bytes == NULL) {
        return -1;
    }
    return (long long)__sanitizer_get_current_allocated_bytes();
}
