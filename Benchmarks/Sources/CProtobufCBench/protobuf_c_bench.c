// See include/protobuf_c_bench.h.
#include "protobuf_c_bench.h"

#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "imcodec_arena.h"
#include "imcodec/v1/frame.pb-c.h"

size_t pbc_bench_unpack(const uint8_t *const *data, const size_t *lens, size_t count, size_t passes,
                        uint64_t *checksum) {
    size_t failures = 0;
    uint64_t sum = 0;
    for (size_t pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < count; i++) {
            Imcodec__V1__Frame *frame = imcodec__v1__frame__unpack(NULL, lens[i], data[i]);
            if (frame == NULL) {
                failures++;
                continue;
            }
            sum += (uint64_t)frame->payload_case;
            imcodec__v1__frame__free_unpacked(frame, NULL);
        }
    }
    *checksum = sum;
    return failures;
}

void *pbc_bench_arena_create(void) { return imcodec_arena_create(64 << 10, SIZE_MAX); }

void pbc_bench_arena_destroy(void *arena) { imcodec_arena_destroy((imcodec_arena *)arena); }

size_t pbc_bench_unpack_arena(void *arena_pointer, const uint8_t *const *data, const size_t *lens, size_t count,
                              size_t passes, uint64_t *checksum) {
    imcodec_arena *arena = (imcodec_arena *)arena_pointer;
    ProtobufCAllocator *allocator = imcodec_arena_allocator(arena);
    size_t failures = 0;
    uint64_t sum = 0;
    for (size_t pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < count; i++) {
            Imcodec__V1__Frame *frame = imcodec__v1__frame__unpack(allocator, lens[i], data[i]);
            if (frame == NULL) {
                failures++;
            } else {
                sum += (uint64_t)frame->payload_case;
            }
            imcodec_arena_reset(arena);
        }
    }
    *checksum = sum;
    return failures;
}

size_t pbc_bench_unpack_all(const uint8_t *const *data, const size_t *lens, size_t count, void **messages) {
    size_t failures = 0;
    for (size_t i = 0; i < count; i++) {
        messages[i] = imcodec__v1__frame__unpack(NULL, lens[i], data[i]);
        if (messages[i] == NULL) failures++;
    }
    return failures;
}

void pbc_bench_free_all(void **messages, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (messages[i] != NULL) imcodec__v1__frame__free_unpacked((Imcodec__V1__Frame *)messages[i], NULL);
        messages[i] = NULL;
    }
}

size_t pbc_bench_pack(void *const *messages, const size_t *lens, size_t count, size_t passes, uint8_t *buffer,
                      size_t capacity, uint64_t *checksum) {
    size_t mismatches = 0;
    uint64_t sum = 0;
    for (size_t pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < count; i++) {
            const Imcodec__V1__Frame *frame = (const Imcodec__V1__Frame *)messages[i];
            size_t size = imcodec__v1__frame__get_packed_size(frame);
            if (size > capacity || size != lens[i]) {
                mismatches++;
                continue;
            }
            size_t written = imcodec__v1__frame__pack(frame, buffer);
            sum += written + buffer[0];
        }
    }
    *checksum = sum;
    return mismatches;
}
