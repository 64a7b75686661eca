// A bump allocator that backs protobuf-c while IMCodec decodes and encodes.
//
// protobuf-c calls its allocator once per message, string, repeated array and unknown field.
// Pointing it at an arena turns those into pointer bumps and frees them all at once with
// imcodec_arena_reset(). The arena also caps the bytes it hands out (max_bytes): once the cap would
// be passed, allocation returns NULL, protobuf-c fails cleanly, and imcodec_arena_limit_hit()
// tells IMCodec to report "memory limit exceeded" instead of a generic failure.
//
//   +-----------+      +-----------+      +-----------------+
//   | block 0   | ---> | block 1   | ---> | block 2 (bigger)| ...  each block: header + bytes
//   +-----------+      +-----------+      +-----------------+
//      ^ kept on reset     freed on reset
#ifndef IMCODEC_ARENA_H
#define IMCODEC_ARENA_H

#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct imcodec_arena imcodec_arena;

/// Creates an arena whose first block holds `first_block_size` bytes and that never hands out more
/// than `max_bytes` in total between two resets. Returns NULL when memory is exhausted.
imcodec_arena *imcodec_arena_create(size_t first_block_size, size_t max_bytes);

/// Frees the arena and every block it holds. Accepts NULL.
void imcodec_arena_destroy(imcodec_arena *arena);

/// Forgets every allocation: keeps the first block for reuse, frees the others, clears the
/// limit flag.
void imcodec_arena_reset(imcodec_arena *arena);

/// Changes the cap for the allocations that follow (takes effect immediately).
void imcodec_arena_set_max_bytes(imcodec_arena *arena, size_t max_bytes);

/// Returns `size` bytes aligned to 16, or NULL when the cap would be passed (the limit flag is then
/// set) or the system is out of memory. `size` 0 returns a valid, unique-enough non-NULL pointer.
void *imcodec_arena_alloc(imcodec_arena *arena, size_t size);

/// The protobuf-c allocator view of the arena: alloc bumps, free does nothing.
ProtobufCAllocator *imcodec_arena_allocator(imcodec_arena *arena);

/// Whether an allocation was refused by the cap since the last reset.
int imcodec_arena_limit_hit(const imcodec_arena *arena);

/// Bytes handed out since the last reset (including alignment padding).
size_t imcodec_arena_bytes_used(const imcodec_arena *arena);

/// Bytes the arena currently holds from the system (all blocks, headers included).
size_t imcodec_arena_bytes_reserved(const imcodec_arena *arena);

#ifdef __cplusplus
}
#endif

#endif
