// The raw protobuf-c baseline: the same corpus through protobuf-c 1.4.1 from C, with no Swift and
// no IMCodec checks in the loop. This is the physical limit of the "protobuf-c decodes, Swift
// reads" design that IMCodec builds on.
//
// Every function loops `passes` times over `count` frames (data[i], lens[i]) and returns the
// number of frames protobuf-c rejected (0 for a valid corpus). `*checksum` receives a value
// derived from what was decoded or encoded, so the work cannot be optimised away.
#ifndef PROTOBUF_C_BENCH_H
#define PROTOBUF_C_BENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// imcodec__v1__frame__unpack with the default (malloc) allocator, then
/// imcodec__v1__frame__free_unpacked, for every frame.
size_t pbc_bench_unpack(const uint8_t *const *data, const size_t *lens, size_t count, size_t passes,
                        uint64_t *checksum);

/// imcodec__v1__frame__unpack into an IMCodec arena (imcodec_arena.h, a bump allocator), reset
/// after every frame. `arena` is an `imcodec_arena *` made by pbc_bench_arena_create.
size_t pbc_bench_unpack_arena(void *arena, const uint8_t *const *data, const size_t *lens, size_t count,
                              size_t passes, uint64_t *checksum);

/// An arena for pbc_bench_unpack_arena (64 KiB first block, no cap). Free with pbc_bench_arena_destroy.
void *pbc_bench_arena_create(void);
void pbc_bench_arena_destroy(void *arena);

/// Unpacks every frame with the malloc allocator into `messages[i]` (for pbc_bench_pack).
/// Returns the number that failed.
size_t pbc_bench_unpack_all(const uint8_t *const *data, const size_t *lens, size_t count, void **messages);

/// Frees what pbc_bench_unpack_all made.
void pbc_bench_free_all(void **messages, size_t count);

/// imcodec__v1__frame__get_packed_size + imcodec__v1__frame__pack of every unpacked frame into
/// `buffer` (at least the largest frame's size). Returns the number of frames whose packed size
/// differs from lens[i] (0: protobuf-c re-encodes the corpus byte for byte in size).
size_t pbc_bench_pack(void *const *messages, const size_t *lens, size_t count, size_t passes, uint8_t *buffer,
                      size_t capacity, uint64_t *checksum);

#ifdef __cplusplus
}
#endif

#endif
