// The bump allocator behind protobuf-c (see imcodec_arena.h for the contract).
//
// Layout
// ------
//
//   imcodec_arena                      block (one malloc each)
//   +-------------------+              +------------------+------------------------------+
//   | allocator (view)  |   first ---> | next | capacity  | bytes[capacity]              |
//   | first, current    |              +------------------+------------------------------+
//   | pos (in current)  |                 | next
//   | used, max_bytes   |                 v
//   | reserved, flags   |              +------------------+---------------------------------------+
//   +-------------------+  current --> | next | capacity  | bytes[capacity]   (>= 2x the previous) |
//                                      +------------------+---------------------------------------+
//                                                          ^ used part ^ pos   ^ free part
//
// Allocation rounds the bump pointer up to the next 16-byte *address* (not offset), so the result
// is aligned whatever alignment malloc gives the block. The padding counts as used bytes. When the
// current block cannot hold the request, a new block is appended and becomes current; the tail of
// the old block is abandoned until the next reset. A new block holds max(2 x the previous block,
// request + 15) bytes, but never much more than the cap still allows.
//
// The cap (max_bytes) bounds `used`, the bytes handed out since the last reset (padding included).
// A request that would pass it returns NULL and sets limit_hit; nothing else changes, so a smaller
// request may still succeed afterwards. All size arithmetic is checked: a request near SIZE_MAX
// returns NULL instead of wrapping around.
//
// The ProtobufCAllocator view bumps on alloc and ignores free: memory comes back only through
// imcodec_arena_reset() or imcodec_arena_destroy(). There is no global state; an arena must be used
// by one thread at a time.
#include "imcodec_arena.h"

#include <stdint.h>
#include <stdlib.h>

#define ARENA_ALIGN ((size_t)16)
/// Block size used when imcodec_arena_create() is given 0.
#define ARENA_DEFAULT_FIRST_BLOCK ((size_t)4096)

typedef struct arena_block {
    struct arena_block *next;
    size_t capacity;  // bytes usable after the header
    // The bytes follow the header (see block_bytes()).
} arena_block;

struct imcodec_arena {
    ProtobufCAllocator allocator;  // alloc = arena_pb_alloc, free = arena_pb_free, data = this
    arena_block *first;            // kept on reset
    arena_block *current;          // the block being bumped (the last in the list)
    size_t pos;                    // bytes of current consumed (from its start)
    size_t used;                   // bytes handed out since the last reset, padding included
    size_t max_bytes;              // cap on used
    size_t reserved;               // bytes of all blocks, headers included
    int limit_hit;                 // an allocation was refused by the cap since the last reset
    // Zero-size requests return the first 16-aligned address in here: owned by the arena, never
    // written, distinct from every sized allocation. (Aligned by address, so that the arena
    // itself needs no more than malloc's alignment.)
    unsigned char zero_size_slot[2 * 16];
};

static inline unsigned char *block_bytes(arena_block *block) {
    return (unsigned char *)(block + 1);
}

/// Allocates a block with `capacity` usable bytes, or NULL (also when the size overflows).
static arena_block *block_new(size_t capacity) {
    if (capacity > SIZE_MAX - sizeof(arena_block)) {
        return NULL;
    }
    arena_block *block = malloc(sizeof(arena_block) + capacity);
    if (block == NULL) {
        return NULL;
    }
    block->next = NULL;
    block->capacity = capacity;
    return block;
}

/// Padding needed to move `p` up to the next multiple of ARENA_ALIGN.
static inline size_t padding_for(const unsigned char *p) {
    return (size_t)(-(uintptr_t)p) & (ARENA_ALIGN - 1);
}

static void *arena_pb_alloc(void *allocator_data, size_t size) {
    return imcodec_arena_alloc((imcodec_arena *)allocator_data, size);
}

static void arena_pb_free(void *allocator_data, void *pointer) {
    (void)allocator_data;
    (void)pointer;
}

imcodec_arena *imcodec_arena_create(size_t first_block_size, size_t max_bytes) {
    if (first_block_size == 0) {
        first_block_size = ARENA_DEFAULT_FIRST_BLOCK;
    }
    imcodec_arena *arena = malloc(sizeof(imcodec_arena));
    if (arena == NULL) {
        return NULL;
    }
    arena_block *first = block_new(first_block_size);
    if (first == NULL) {
        free(arena);
        return NULL;
    }
    arena->allocator.alloc = arena_pb_alloc;
    arena->allocator.free = arena_pb_free;
    arena->allocator.allocator_data = arena;
    arena->first = first;
    arena->current = first;
    arena->pos = 0;
    arena->used = 0;
    arena->max_bytes = max_bytes;
    arena->reserved = sizeof(arena_block) + first_block_size;
    arena->limit_hit = 0;
    return arena;
}

void imcodec_arena_destroy(imcodec_arena *arena) {
    if (arena == NULL) {
        return;
    }
    arena_block *block = arena->first;
    while (block != NULL) {
        arena_block *next = block->next;
        free(block);
        block = next;
    }
    free(arena);
}

void imcodec_arena_reset(imcodec_arena *arena) {
    arena_block *block = arena->first->next;
    while (block != NULL) {
        arena_block *next = block->next;
        free(block);
        block = next;
    }
    arena->first->next = NULL;
    arena->current = arena->first;
    arena->pos = 0;
    arena->used = 0;
    arena->reserved = sizeof(arena_block) + arena->first->capacity;
    arena->limit_hit = 0;
}

void imcodec_arena_set_max_bytes(imcodec_arena *arena, size_t max_bytes) {
    arena->max_bytes = max_bytes;
}

/// Whether handing out `padding + size` more bytes stays within the cap (overflow-safe).
static inline int within_cap(const imcodec_arena *arena, size_t padding, size_t size) {
    // imcodec_arena_set_max_bytes() may have lowered the cap below what is already used.
    if (arena->used > arena->max_bytes) {
        return 0;
    }
    size_t room = arena->max_bytes - arena->used;
    return padding <= room && size <= room - padding;
}

void *imcodec_arena_alloc(imcodec_arena *arena, size_t size) {
    if (size == 0) {
        return arena->zero_size_slot + padding_for(arena->zero_size_slot);
    }

    // Fast path: the request fits in the current block.
    arena_block *block = arena->current;
    unsigned char *cursor = block_bytes(block) + arena->pos;
    size_t padding = padding_for(cursor);
    size_t free_bytes = block->capacity - arena->pos;
    if (padding <= free_bytes && size <= free_bytes - padding) {
        if (!within_cap(arena, padding, size)) {
            arena->limit_hit = 1;
            return NULL;
        }
        arena->pos += padding + size;
        arena->used += padding + size;
        return cursor + padding;
    }

    // Slow path: a new block. Refuse early what the cap refuses whatever the padding.
    if (!within_cap(arena, 0, size)) {
        arena->limit_hit = 1;
        return NULL;
    }
    if (size > SIZE_MAX - (ARENA_ALIGN - 1)) {
        return NULL;
    }
    size_t needed = size + (ARENA_ALIGN - 1);  // room for the worst-case padding
    size_t capacity = block->capacity <= SIZE_MAX / 2 ? block->capacity * 2 : SIZE_MAX;
    // Do not reserve far beyond what the cap still allows (within_cap() above implies
    // used <= max_bytes here).
    size_t cap_room = arena->max_bytes - arena->used;
    if (cap_room <= SIZE_MAX - (ARENA_ALIGN - 1) && capacity > cap_room + (ARENA_ALIGN - 1)) {
        capacity = cap_room + (ARENA_ALIGN - 1);
    }
    if (capacity < needed) {
        capacity = needed;
    }
    arena_block *fresh = block_new(capacity);
    if (fresh == NULL) {
        return NULL;
    }
    block->next = fresh;
    arena->current = fresh;
    arena->pos = 0;
    arena->reserved += sizeof(arena_block) + capacity;

    cursor = block_bytes(fresh);
    padding = padding_for(cursor);
    if (!within_cap(arena, padding, size)) {
        // Only possible when malloc returns blocks that are not 16-aligned. Keep the block.
        arena->limit_hit = 1;
        return NULL;
    }
    arena->pos = padding + size;
    arena->used += padding + size;
    return cursor + padding;
}

ProtobufCAllocator *imcodec_arena_allocator(imcodec_arena *arena) {
    return &arena->allocator;
}

int imcodec_arena_limit_hit(const imcodec_arena *arena) {
    return arena->limit_hit;
}

size_t imcodec_arena_bytes_used(const imcodec_arena *arena) {
    return arena->used;
}

size_t imcodec_arena_bytes_reserved(const imcodec_arena *arena) {
    return arena->reserved;
}
