// See include/heap_statistics.h.
#include "heap_statistics.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

long long heap_statistics_bytes_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
#else
    return -1;
#endif
}
