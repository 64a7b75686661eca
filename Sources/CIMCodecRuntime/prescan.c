// imcodec_prescan: one iterative pass over protobuf wire bytes before protobuf-c unpacks them.
//
// Why
// ---
// protobuf-c 1.4.1 unpacks nested messages by recursion (1 KB or more of C stack per level, no
// limit), accepts any bytes in a string, and answers every problem with a bare NULL. This pass
// looks at the same bytes first, with the same descriptors, without recursion and without the
// heap, and stops at the first problem with its status, byte offset, field and message. When it
// returns IMCODEC_SCAN_OK, protobuf_c_message_unpack() can only fail by running out of memory
// (for example when an imcodec_arena hits its cap).
//
// Algorithm
// ---------
// The walk keeps the message being read (its descriptor and the absolute offset where its bytes
// end) in `cur` / `end`, and its ancestors in an explicit stack of IMCODEC_PRESCAN_DEPTH_CAP frames
// on the C stack (48 bytes each on 64-bit targets, 24 KiB in all):
//
//     stack[0]          stack[1]          ...   stack[depth - 1]   <- the message being read
//   +---------------+ +---------------+       +---------------+
//   | descriptor  --+-+-> Frame       |       | descriptor  --+--> e.g. imcodec.v1.TextElement
//   | end = len     | | end (absolute)|       | end (absolute)|      (also in cur / end)
//   +---------------+ +---------------+       +---------------+
//
//   loop:
//     if pos == end:                        the current message is complete
//         depth == 1 ? done : pop           (a frame is popped only at its exact end)
//     read the tag (varint32, 1..5 bytes)   field number 1 ... 2^29-1; wire type 0, 1, 2 or 5
//     count the field                       > max_fields -> TOO_MANY_FIELDS
//     look the number up in cur             unknown: skip the value by its wire type, never descend
//     known: check the wire type            declared one, or length-delimited (packed) for a
//                                           repeated scalar; anything else -> WIRE_TYPE_MISMATCH
//     read the value, bounded by `end`
//       varint   at most 10 bytes
//       fixed    8 or 4 bytes
//       length   varint of at most 5 bytes, <= 2^31-1, payload inside `end`
//         message  -> push (depth + 1 > max_depth -> TOO_DEEP), continue inside the payload
//         string   -> UTF-8 (C strings, i.e. PROTOBUF_C_TYPE_STRING, also without U+0000)
//         packed   -> whole elements only; each element counts as a field
//
// Every value is checked against `end` (the enclosing message) before it is consumed, so the read
// position never passes `end`, a child's end never passes its parent's, and every byte is read at
// most once: the pass is O(len) in time and O(1) in space.
//
// Conventions of the result (what the Swift bridge reports)
// ---------------------------------------------------------
// offset, always absolute (from data[0]):
//   - a problem with a tag (truncated, too long, field number 0, wire type 3/4/6/7,
//     wire type mismatch, too many fields, too deep): the tag's first byte;
//   - a problem with a value (varint too long or truncated, fixed value truncated, length prefix
//     too long / too large / truncated, payload past the end): the value's first byte, i.e. the
//     byte right after the tag (for length-delimited values: the first byte of the length prefix);
//   - a packed payload that is not whole elements: the first byte of the incomplete element;
//   - more than max_fields because of a packed element: that element's first byte (the first
//     element of a packed payload is counted with its tag);
//   - invalid UTF-8: the first byte of the first ill-formed sequence (its lead byte; a stray
//     continuation byte is its own lead); U+0000 in a C string: the 0 byte.
// field_number: the field whose tag or value failed (0 when the tag itself could not be read or
//   its number is 0). message_name: descriptor->name of the message being read; for TOO_DEEP that
//   is the parent holding the field. field_count: fields counted so far, including the failing one.
//   max_depth_seen: the deepest level entered (top level = 1).
// On success: status OK, offset = len, field_number 0, message_name = the top-level message,
//   detail NULL, field_count = every field counted.
// max_depth 0 rejects every input (TOO_DEEP at offset 0, even an empty one); max_depth above
//   IMCODEC_PRESCAN_DEPTH_CAP is the cap. max_fields 0 accepts only the empty message.
// `data` may be NULL when len is 0. `descriptor` NULL gives UNSUPPORTED.
//
// Counting: every field occurrence counts one; a packed payload with n elements counts
// max(n, 1) (its tag counts as the first element).
//
// A length prefix is at most 5 bytes, as protobuf-c requires, unless IMCODEC_SCAN_LONG_LENGTHS:
// then, as in upb, Java and Go, it may take up to 10 (padded with 0x80 bytes; C++ refuses past 5),
// and each such prefix counts in `long_length_count` (an unknown field's in `wrap_count`), so that
// imcodec_transcode writes it in 5 bytes or fewer before protobuf-c reads it. So OK here with
// long_length_count and wrap_count 0 means protobuf-c can read every length.
// Stricter than protobuf-c, on purpose: a 5-byte tag with bits above 32 is MALFORMED (protobuf-c
// drops them and reads another field number); field number 0 in a multi-byte tag is MALFORMED
// (protobuf-c keeps it as an unknown field); a BOOL with a wire type other than varint is a
// mismatch (protobuf-c ignores the wire type of bools); U+0000 in a C string is UNSUPPORTED
// (protobuf-c would silently cut the string there; IMCodec's generated code has no such fields).
//
// Refused although well-formed (UNSUPPORTED), unless IMCODEC_SCAN_MERGE_REPEATS: a singular
// sub-message that occurs twice in one message (see singular_message_repeats).
//
// Not checked: proto2 `required` fields (the schemas are proto3), enum values (open in proto3).
//
// imcodec_prescan_ex
// ------------------
// The same pass (scan_core), with these additions (see imcodec_prescan.h):
// - IMCODEC_SCAN_MISMATCH_AS_UNKNOWN: a wire-type mismatch, and any unknown field numbered
//   IMCODEC_WRAPPER_FIELD_NUMBER, is counted in wrap_count and skipped like an unknown field
//   (never descended into, never counted as an occurrence of its known field, so it does not
//   touch a oneof or the repeated-message check); transcode.c then wraps exactly those fields.
// - IMCODEC_SCAN_MERGE_REPEATS: a repeated singular sub-message is counted in merge_count, and
//   transcode.c merges it.
// - The memory estimate ("Memory estimate" below), charged field by field and checked against
//   max_memory after each field. It is compiled into a second instantiation of scan_core, used only
//   when the input is long enough to pass max_memory at all (imcodec_scan_bound gives the most a
//   byte of input can cost); shorter inputs, i.e. almost all IM frames with the default limits,
//   take the instantiation without it.
//
// Fast paths
// ----------
// What the pass does for every field and every string byte is kept short (measured with
// callgrind; none of it changes a result):
// - UTF-8: an ASCII run is checked 8 bytes at a time (a uint64 read with memcpy, no alignment
//   assumed; for C strings the same word also rules out 0 bytes), and the last 1 to 7 bytes of a
//   string of 8 or more with one overlapping word; the exact validator takes over at the first
//   word that is not plain ASCII, and is the only one to say where and why input is ill-formed.
//   Multi-byte text goes from one sequence to the next without trying the word test.
// - Field lookup: with numbers dense from 1 (IMCodec's schemas) a field is at fields[number - 1],
//   one compare to confirm; otherwise protobuf-c's binary search over field_ranges. Either gives the
//   field's index, which keys the per-message bitmaps. (A lookup table would cost as much as that
//   compare, and need storage built somewhere: not worth it.)
// - The check for a repeated singular sub-message only runs for message fields and oneof members.
// - The memory estimate is charged in the same pass, field by field; the element cost of a repeated
//   message type (a binary search in the caller's table) is remembered for the last two types.
#include "imcodec_prescan.h"
#include "imcodec_string_field.h"

#include <string.h>

// MARK: - UTF-8

#define HIGH_BITS UINT64_C(0x8080808080808080)
#define LOW_ONES UINT64_C(0x0101010101010101)

/// Returns the index of the first byte of the first ill-formed UTF-8 sequence in s[0..<len] (RFC
/// 3629 / Unicode table 3-7: no overlongs, no surrogates, nothing above U+10FFFF, no truncated
/// sequences), or len when all of it is valid. With reject_nul, a 0 byte also stops the scan at
/// its index (the caller tells the two apart: a stop at a 0 byte can only be a U+0000).
static inline size_t utf8_scan(const uint8_t *s, size_t len, int reject_nul) {
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            // An ASCII run: 8 bytes at a time while whole words are ASCII; then, for the last 1 to
            // 7 bytes of a string of at least 8, the word of its last 8 bytes (it overlaps bytes
            // already read: if they are all ASCII, so is the rest of the string); then byte by
            // byte up to the first byte that is not. For C strings a byte must also be non-zero:
            // (w - 0x01..01) sets a byte's high bit for the lowest zero byte (the borrow), and
            // never when every byte is 0x01 ... 0x7F. A word that fails is left to the byte loop,
            // which finds the exact byte. Non-ASCII text (e.g. CJK) never enters this branch
            // between its multi-byte sequences, so it pays nothing for the fast path.
            if (reject_nul) {
                while (len - i >= 8) {
                    uint64_t w;
                    memcpy(&w, s + i, 8);
                    if (((w | (w - LOW_ONES)) & HIGH_BITS) != 0) {
                        break;
                    }
                    i += 8;
                }
                if (len - i < 8 && len >= 8) {
                    uint64_t w;
                    memcpy(&w, s + len - 8, 8);
                    if (((w | (w - LOW_ONES)) & HIGH_BITS) == 0) {
                        return len;
                    }
                }
            } else {
                while (len - i >= 8) {
                    uint64_t w;
                    memcpy(&w, s + i, 8);
                    if ((w & HIGH_BITS) != 0) {
                        break;
                    }
                    i += 8;
                }
                if (len - i < 8 && len >= 8) {
                    uint64_t w;
                    memcpy(&w, s + len - 8, 8);
                    if ((w & HIGH_BITS) == 0) {
                        return len;
                    }
                }
            }
            for (;;) {
                if (i == len) {
                    return len;
                }
                c = s[i];
                if (c >= 0x80) {
                    break;
                }
                if (c == 0 && reject_nul) {
                    return i;
                }
                i++;
            }
        }
        // c = s[i] >= 0x80: the lead byte of a multi-byte sequence (or an ill-formed byte).
        const size_t left = len - i;
        if (c < 0xC2) {
            // 80..BF: a continuation byte without a lead; C0, C1: overlong 2-byte forms.
            return i;
        }
        if (c < 0xE0) {
            // C2..DF 80..BF
            if (left < 2 || (s[i + 1] & 0xC0) != 0x80) {
                return i;
            }
            i += 2;
            continue;
        }
        if (c < 0xF0) {
            // E0 A0..BF 80..BF | E1..EC 80..BF 80..BF | ED 80..9F 80..BF | EE..EF 80..BF 80..BF
            if (left < 3) {
                return i;
            }
            const uint8_t lo = c == 0xE0 ? 0xA0 : 0x80;  // E0 80..9F: overlong
            const uint8_t hi = c == 0xED ? 0x9F : 0xBF;  // ED A0..BF: surrogates D800..DFFF
            const uint8_t b1 = s[i + 1];
            if (b1 < lo || b1 > hi || (s[i + 2] & 0xC0) != 0x80) {
                return i;
            }
            i += 3;
            continue;
        }
        if (c < 0xF5) {
            // F0 90..BF 80..BF 80..BF | F1..F3 80..BF x3 | F4 80..8F 80..BF 80..BF
            if (left < 4) {
                return i;
            }
            const uint8_t lo = c == 0xF0 ? 0x90 : 0x80;  // F0 80..8F: overlong
            const uint8_t hi = c == 0xF4 ? 0x8F : 0xBF;  // F4 90..: above U+10FFFF
            const uint8_t b1 = s[i + 1];
            if (b1 < lo || b1 > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) {
                return i;
            }
            i += 4;
            continue;
        }
        // F5..FF: would encode above U+10FFFF (or are not UTF-8 at all).
        return i;
    }
    return len;
}

int imcodec_utf8_valid(const uint8_t *data, size_t len) {
    return utf8_scan(data, len, 0) == len;
}

size_t imcodec_utf8_first_invalid(const uint8_t *data, size_t len) {
    return utf8_scan(data, len, 0);
}

// MARK: - Wire primitives

enum {
    WT_VARINT = 0,
    WT_FIXED64 = 1,
    WT_LEN = 2,
    WT_FIXED32 = 5,
    WT_NONE = 0xFF,  // not a field type protobuf-c knows
};

/// The wire type each ProtobufCType is declared with.
static const uint8_t expected_wire_type[PROTOBUF_C_TYPE_MESSAGE + 1] = {
    [PROTOBUF_C_TYPE_INT32] = WT_VARINT,   [PROTOBUF_C_TYPE_SINT32] = WT_VARINT,
    [PROTOBUF_C_TYPE_SFIXED32] = WT_FIXED32, [PROTOBUF_C_TYPE_INT64] = WT_VARINT,
    [PROTOBUF_C_TYPE_SINT64] = WT_VARINT,  [PROTOBUF_C_TYPE_SFIXED64] = WT_FIXED64,
    [PROTOBUF_C_TYPE_UINT32] = WT_VARINT,  [PROTOBUF_C_TYPE_FIXED32] = WT_FIXED32,
    [PROTOBUF_C_TYPE_UINT64] = WT_VARINT,  [PROTOBUF_C_TYPE_FIXED64] = WT_FIXED64,
    [PROTOBUF_C_TYPE_FLOAT] = WT_FIXED32,  [PROTOBUF_C_TYPE_DOUBLE] = WT_FIXED64,
    [PROTOBUF_C_TYPE_BOOL] = WT_VARINT,    [PROTOBUF_C_TYPE_ENUM] = WT_VARINT,
    [PROTOBUF_C_TYPE_STRING] = WT_LEN,     [PROTOBUF_C_TYPE_BYTES] = WT_LEN,
    [PROTOBUF_C_TYPE_MESSAGE] = WT_LEN,
};

/// Index of a valid wire type (0, 1, 2, 5) in mismatch_detail.
static inline unsigned wire_index(unsigned wire_type) {
    return wire_type == WT_FIXED32 ? 3u : wire_type;
}

/// mismatch_detail[received][expected], indexed by wire_index().
static const char *const mismatch_detail[4][4] = {
    {NULL, "wire type 0 for a fixed64 field", "wire type 0 for a length-delimited field",
     "wire type 0 for a fixed32 field"},
    {"wire type 1 for a varint field", NULL, "wire type 1 for a length-delimited field",
     "wire type 1 for a fixed32 field"},
    {"wire type 2 for a non-repeated varint field", "wire type 2 for a non-repeated fixed64 field",
     NULL, "wire type 2 for a non-repeated fixed32 field"},
    {"wire type 5 for a varint field", "wire type 5 for a fixed64 field",
     "wire type 5 for a length-delimited field", NULL},
};

enum { READ_OK = 0, READ_TRUNCATED = 1, READ_TOO_LONG = 2, READ_TOO_LARGE = 3 };

/// Skips a varint of at most 10 bytes in data[*pos..<end).
static inline int skip_varint(const uint8_t *data, size_t *pos, size_t end) {
    size_t p = *pos;
    if (p < end && data[p] < 0x80) {  // the common case: one byte
        *pos = p + 1;
        return READ_OK;
    }
    const size_t limit = end - p > 10 ? p + 10 : end;
    while (p < limit) {
        if ((data[p++] & 0x80) == 0) {
            *pos = p;
            return READ_OK;
        }
    }
    // Ten bytes, the tenth with its continuation bit, or the end came first.
    return p - *pos == 10 ? READ_TOO_LONG : READ_TRUNCATED;
}

/// Reads a length prefix: a varint of at most `max_bytes` bytes (5, as protobuf-c reads, or 10 with
/// IMCODEC_SCAN_LONG_LENGTHS; bits past the 64th dropped, as upb does) whose value is at most
/// 2^31-1.
static inline int read_length(const uint8_t *data, size_t *pos, size_t end, unsigned max_bytes, size_t *out) {
    size_t p = *pos;
    if (p < end && data[p] < 0x80) {
        *out = data[p];
        *pos = p + 1;
        return READ_OK;
    }
    uint64_t value = 0;
    for (unsigned i = 0; i < max_bytes; i++, p++) {
        if (p == end) {
            return READ_TRUNCATED;
        }
        const uint8_t b = data[p];
        value |= (uint64_t)(b & 0x7F) << (7 * i);
        if ((b & 0x80) == 0) {
            if (value > 0x7FFFFFFF) {
                return READ_TOO_LARGE;
            }
            *out = (size_t)value;
            *pos = p + 1;
            return READ_OK;
        }
    }
    return READ_TOO_LONG;
}

/// Finds field `number` (>= 1) in `desc` and sets *index to its index in desc->fields: first where
/// it sits when numbers are dense from 1 (IMCodec's schemas, almost always), else by protobuf-c's
/// binary search over the number ranges. The index is what the per-message bitmaps are keyed by;
/// the dense case gets it without a pointer difference (a division by the descriptor's size).
static inline const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *desc,
                                                          uint32_t number, size_t *index) {
    if (number - 1 < desc->n_fields && desc->fields[number - 1].id == number) {
        *index = number - 1;
        return &desc->fields[number - 1];
    }
    const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field(desc, number);
    if (field != NULL) {
        *index = (size_t)(field - desc->fields);
    }
    return field;
}

// MARK: - Memory estimate

#define R16(n) (((size_t)(n) + 15) & ~(size_t)15)

/// Bytes protobuf-c's arena gives one message: the struct, and the bitmap of required fields that
/// protobuf_c_message_unpack allocates when it does not fit its 16 bytes on the stack.
static inline size_t message_struct_bytes(const ProtobufCMessageDescriptor *desc) {
    const size_t bitmap = (desc->n_fields + 7) / 8;
    return R16(desc->sizeof_message) + (bitmap > 16 ? R16(bitmap) : 0);
}

/// Bytes of the ScannedMember slab protobuf_c_message_unpack allocates when it reads tag number
/// `tags` (1, 2, ...) of a message, or 0. It keeps 16 members (32 bytes each) on the stack, then
/// allocates slabs of 32, 64, 128, ... members: when tag 17, 49, 113, ... arrives, i.e. when
/// tags + 15 is a power of two of at least 32, and the new slab holds tags + 15 members.
static inline size_t slab_bytes_at(size_t tags) {
    const size_t t = tags + 15;
    return t >= 32 && (t & (t - 1)) == 0 ? 32 * t : 0;
}

/// Bytes of one element of a repeated field in protobuf-c's arrays (sizeof_elt_in_repeated_array).
static inline size_t c_element_size(ProtobufCType type) {
    switch (type) {
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return 8;
    case PROTOBUF_C_TYPE_BYTES:
        return 16;
    default:
        return 4;  // 32-bit types, enums, protobuf_c_boolean
    }
}

/// Swift heap of a String or [UInt8] made from `n` bytes (see "Memory estimate").
static inline size_t value_string_bytes(size_t n, int is_bytes) {
    if (n == 0 || (!is_bytes && n <= 15)) {
        return 0;  // the empty array, or a small string stored inline
    }
    return R16(n + 48);
}

/// The caller's cost of one element of a repeated field of message type `desc`.
static inline size_t element_cost(const imcodec_scan_options *o, const ProtobufCMessageDescriptor *desc) {
    size_t lo = 0;
    size_t hi = o->element_cost_count;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const uintptr_t at = (uintptr_t)o->element_costs[mid].descriptor;
        if (at == (uintptr_t)desc) {
            return o->element_costs[mid].element_size;
        }
        if (at < (uintptr_t)desc) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return o->default_element_cost;
}

/// element_cost() of the last two message types asked for, most recent first: a list of messages
/// with lists of elements alternates between two types, which then need no binary search.
typedef struct {
    const ProtobufCMessageDescriptor *descriptor[2];
    size_t cost[2];
} element_cost_cache;

/// element_cost(o, desc) through `cache` (out of line: it is not on every field's path, and the
/// pass keeps its registers).
static __attribute__((noinline)) size_t cached_element_cost(element_cost_cache *cache, const imcodec_scan_options *o,
                                                           const ProtobufCMessageDescriptor *desc) {
    if (desc == cache->descriptor[0]) {
        return cache->cost[0];
    }
    const size_t cost = desc == cache->descriptor[1] ? cache->cost[1] : element_cost(o, desc);
    cache->descriptor[1] = cache->descriptor[0];
    cache->cost[1] = cache->cost[0];
    cache->descriptor[0] = desc;
    cache->cost[0] = cost;
    return cost;
}

/// Bytes of a varint holding `v`.
static inline size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

// MARK: - The pass

typedef struct {
    const ProtobufCMessageDescriptor *descriptor;
    size_t end;  // absolute offset one past the message's last byte
    // Bit i: the singular message field descriptor->fields[i] has occurred in this message.
    // (Scripts/protoc-gen-imcodec-swift refuses schemas with messages of more than 64 fields.)
    uint64_t singular_messages_seen;
    // Bit i: the repeated field descriptor->fields[i] has been charged its array (memory estimate).
    uint64_t repeated_seen;
    size_t tags;      // tags read in this message (protobuf-c's ScannedMembers)
    size_t unknowns;  // unknown fields in this message (wrapped ones included)
} scan_frame;

// A singular message field that occurs twice must be merged (protobuf's rule for concatenated
// messages). protobuf-c 1.4.1 gets that wrong: merging lets the second occurrence's zero proto3
// scalars overwrite the first's values, and a oneof member is replaced instead of merged. So such
// input is either refused (UNSUPPORTED) or, with IMCODEC_SCAN_MERGE_REPEATS, counted for
// imcodec_transcode, which merges the occurrences before protobuf-c sees them.
// A oneof member resets the record of its siblings, since setting another member clears the oneof.
// Only a oneof member or a message field can change anything here: the caller skips the call for
// other fields. `index` is field's index in frame->descriptor->fields.
static int singular_message_repeats(scan_frame *frame, const ProtobufCFieldDescriptor *field, size_t index) {
    const ProtobufCMessageDescriptor *desc = frame->descriptor;
    if ((field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && frame->singular_messages_seen != 0) {
        // (Nothing to reset while no message field has been seen: the common case.)
        for (unsigned i = 0; i < desc->n_fields && i < 64; i++) {
            if (i != index && (desc->fields[i].flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                desc->fields[i].quantifier_offset == field->quantifier_offset) {
                frame->singular_messages_seen &= ~((uint64_t)1 << i);
            }
        }
    }
    if (field->type != PROTOBUF_C_TYPE_MESSAGE || field->label == PROTOBUF_C_LABEL_REPEATED || index >= 64) {
        return 0;
    }
    const uint64_t bit = (uint64_t)1 << index;
    if (frame->singular_messages_seen & bit) {
        return 1;
    }
    frame->singular_messages_seen |= bit;
    return 0;
}

/// Whether this is the first occurrence of the repeated field descriptor->fields[index] in the
/// message of `frame` (its array and the caller's array are charged once). Fields past the 64th
/// always count as first.
static inline int repeated_first(scan_frame *frame, size_t index) {
    if (index >= 64) {
        return 1;
    }
    const uint64_t bit = (uint64_t)1 << index;
    if (frame->repeated_seen & bit) {
        return 0;
    }
    frame->repeated_seen |= bit;
    return 1;
}

// Memory estimate: what each construct costs (arena = protobuf-c's arena, value = the caller's
// heap; the constants of the Swift side are checked by HardeningTests and Fuzz/):
//
//   construct                        arena                              value
//   message (each, top level too)    R16(sizeof_message)                -
//   its tags (each occurrence)       ScannedMember slabs (slab_bytes_at) -
//   its first unknown field          16 (array padding)                 64 (array header)
//   each unknown field               24 + R16(bytes after the tag)      tag and value bytes
//     ... wrapped (transcoded)       24 + R16(prefix + whole field)     (same)
//   repeated field, first in msg     16 (array padding)                 48 (array header)
//     each element                   its element size (4, 8, 16)        8 (scalar), 16 (string),
//                                                                       element_cost (message)
//   string / bytes of n bytes        R16(n) (n > 0)                     R16(n + 48) when heap
//   map key / value (C string)       R16(n + 1)                         R16(n + 48) when n > 15
//   a repeated singular sub-message  - (merged into the first)          -
//
// Input with repeated singular sub-messages (merge_count > 0) is rewritten before protobuf-c sees
// it, and a merged message's tags together may need larger ScannedMember slabs than its parts:
// the caller scans the rewritten bytes again (they hold no repeats) and checks that estimate.
//
// where R16 rounds up to 16 (the arena's alignment), so `arena` is exact or above what protobuf-c
// takes (by at most 15 bytes per array); every cost is charged when its field is read, so the scan
// stops at the field where the estimate passes max_memory; the value side over-approximates Swift's allocations (String: 32-byte header + NUL,
// heap only above 15 bytes; Array: 32-byte header; malloc's 8-byte chunk header, 16-byte steps).
//
// `estimate` is a constant in each instantiation (see imcodec_prescan_ex): without it, none of the
// accounting is compiled in and the pass runs as fast as before the estimate existed.
static inline __attribute__((always_inline)) imcodec_scan_result scan_core(
    const ProtobufCMessageDescriptor *descriptor, const uint8_t *data, size_t len,
    const imcodec_scan_options *o, const int estimate) {
    imcodec_scan_result result;
    memset(&result, 0, sizeof result);

    scan_frame stack[IMCODEC_PRESCAN_DEPTH_CAP];
    const uint32_t max_depth = o->max_depth > IMCODEC_PRESCAN_DEPTH_CAP ? IMCODEC_PRESCAN_DEPTH_CAP : o->max_depth;
    const size_t max_fields = o->max_fields;
    const size_t max_memory = o->max_memory;
    const int mismatch_as_unknown = (o->flags & IMCODEC_SCAN_MISMATCH_AS_UNKNOWN) != 0;
    const int merge_repeats = (o->flags & IMCODEC_SCAN_MERGE_REPEATS) != 0;
    const int long_lengths = (o->flags & IMCODEC_SCAN_LONG_LENGTHS) != 0;

    const ProtobufCMessageDescriptor *cur = descriptor;  // == stack[depth - 1].descriptor
    size_t end = len;                                     // == stack[depth - 1].end
    scan_frame *top = &stack[0];                          // == &stack[depth - 1]
    uint32_t depth = 1;
    uint32_t depth_seen = 1;
    size_t pos = 0;
    size_t count = 0;
    uint32_t number = 0;
    size_t wraps = 0;
    size_t merges = 0;
    size_t long_length_fields = 0;
    size_t messages = 0;
    size_t arena = 0;  // memory estimate, see above
    size_t value = 0;
    element_cost_cache costs = {{NULL, NULL}, {0, 0}};

    // Filled before `goto fail`.
    imcodec_scan_status status;
    size_t fail_at;
    const char *detail;

#define FAIL(status_, at_, detail_) \
    do {                            \
        status = (status_);         \
        fail_at = (at_);            \
        detail = (detail_);         \
        goto fail;                  \
    } while (0)
#define ENDS(what) (end == len ? "input ends inside " what : "sub-message ends inside " what)

    if (descriptor == NULL) {
        FAIL(IMCODEC_SCAN_UNSUPPORTED, 0, "no message descriptor");
    }
    if (max_depth == 0) {
        depth_seen = 0;
        FAIL(IMCODEC_SCAN_TOO_DEEP, 0, "nesting deeper than max_depth");
    }
    stack[0].descriptor = descriptor;
    stack[0].end = len;
    stack[0].singular_messages_seen = 0;
    stack[0].repeated_seen = 0;
    stack[0].tags = 0;
    stack[0].unknowns = 0;
    if (estimate) {
        arena = message_struct_bytes(descriptor);
    }

#define CHECK_MEMORY(at)                                                                         \
    do {                                                                                         \
        if (estimate && arena + value > max_memory) {                                            \
            FAIL(IMCODEC_SCAN_TOO_MUCH_MEMORY, (at), "the decoded message would take more than max_memory bytes"); \
        }                                                                                        \
    } while (0)

    for (;;) {
        if (pos == end) {
            if (depth == 1) {
                break;
            }
            depth--;
            top = &stack[depth - 1];
            cur = top->descriptor;
            end = top->end;
            continue;
        }

        // -- Tag ----------------------------------------------------------------------------
        const size_t tag_at = pos;
        uint32_t tag;
        number = 0;
        if (data[pos] < 0x80) {
            tag = data[pos++];
        } else {
            tag = 0;
            for (unsigned i = 0;; i++, pos++) {
                if (i == 5) {
                    FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "tag longer than 5 bytes");
                }
                if (pos == end) {
                    FAIL(IMCODEC_SCAN_TRUNCATED, tag_at, ENDS("a tag"));
                }
                const uint8_t b = data[pos];
                if (i == 4 && b > 0x0F && (b & 0x80) == 0) {
                    // Bits 32 and up: the field number would be 2^29 or more.
                    FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "tag does not fit in 32 bits");
                }
                tag |= (uint32_t)(b & 0x7F) << (7 * i);
                if ((b & 0x80) == 0) {
                    pos++;
                    break;
                }
            }
        }
        // A 32-bit tag holds at most field number 2^29-1 = 536870911, so only 0 is left to reject.
        const unsigned wire_type = tag & 7;
        if ((tag >> 3) == 0) {
            FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "field number 0");
        }
        number = tag >> 3;
        switch (wire_type) {
        case WT_VARINT:
        case WT_FIXED64:
        case WT_LEN:
        case WT_FIXED32:
            break;
        case 3:
            FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "group wire type 3 is not supported");
        case 4:
            FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "group wire type 4 is not supported");
        case 6:
            FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "invalid wire type 6");
        default:
            FAIL(IMCODEC_SCAN_MALFORMED, tag_at, "invalid wire type 7");
        }
        if (++count > max_fields) {
            FAIL(IMCODEC_SCAN_TOO_MANY_FIELDS, tag_at, "more than max_fields fields");
        }
        if (estimate) {
            arena += slab_bytes_at(++top->tags);
        }

        // -- Field and wire type --------------------------------------------------------------
        size_t index = 0;  // field's index in cur->fields
        const ProtobufCFieldDescriptor *field = find_field(cur, number, &index);
        unsigned expected = WT_NONE;
        int wrap = 0;
        int duplicate = 0;  // a repeated singular sub-message, merged into its first occurrence
        if (field != NULL) {
            if ((unsigned)field->type > PROTOBUF_C_TYPE_MESSAGE) {
                FAIL(IMCODEC_SCAN_UNSUPPORTED, tag_at, "unknown field type in the descriptor");
            }
            expected = expected_wire_type[field->type];
            if (wire_type != expected &&
                !(wire_type == WT_LEN && field->label == PROTOBUF_C_LABEL_REPEATED)) {
                if (!mismatch_as_unknown) {
                    FAIL(IMCODEC_SCAN_WIRE_TYPE_MISMATCH, tag_at,
                         mismatch_detail[wire_index(wire_type)][wire_index(expected)]);
                }
                // Kept as an unknown field, as Google's parsers do: imcodec_transcode wraps it.
                size_t wrapper_index;
                if (find_field(cur, IMCODEC_WRAPPER_FIELD_NUMBER, &wrapper_index) != NULL) {
                    FAIL(IMCODEC_SCAN_UNSUPPORTED, tag_at,
                         "a wire type mismatch in a message that declares field 536870911");
                }
                field = NULL;
                wrap = 1;
                wraps++;
            } else if (((field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) || field->type == PROTOBUF_C_TYPE_MESSAGE) &&
                       singular_message_repeats(top, field, index)) {
                if (!merge_repeats) {
                    FAIL(IMCODEC_SCAN_UNSUPPORTED, tag_at,
                         "a singular sub-message occurs twice (merging it is not supported)");
                }
                merges++;
                duplicate = 1;
            }
        } else if (number == IMCODEC_WRAPPER_FIELD_NUMBER && mismatch_as_unknown) {
            wrap = 1;  // so that every field of this number in the transcoded bytes is a wrapper
            wraps++;
        }

        // -- Value ------------------------------------------------------------------------------
        const size_t value_at = pos;
        switch (wire_type) {
        case WT_VARINT: {
            const int r = skip_varint(data, &pos, end);
            if (r != READ_OK) {
                if (r == READ_TOO_LONG) {
                    FAIL(IMCODEC_SCAN_MALFORMED, value_at, "varint longer than 10 bytes");
                }
                FAIL(IMCODEC_SCAN_TRUNCATED, value_at, ENDS("a varint"));
            }
            break;
        }
        case WT_FIXED64:
            if (end - pos < 8) {
                FAIL(IMCODEC_SCAN_TRUNCATED, value_at, ENDS("a fixed64 value"));
            }
            pos += 8;
            break;
        case WT_FIXED32:
            if (end - pos < 4) {
                FAIL(IMCODEC_SCAN_TRUNCATED, value_at, ENDS("a fixed32 value"));
            }
            pos += 4;
            break;
        default: {  // WT_LEN
            size_t n;
            const int r = read_length(data, &pos, end, long_lengths ? 10 : 5, &n);
            if (r != READ_OK) {
                if (r == READ_TOO_LONG) {
                    FAIL(IMCODEC_SCAN_MALFORMED, value_at,
                         long_lengths ? "length prefix longer than 10 bytes" : "length prefix longer than 5 bytes");
                }
                if (r == READ_TOO_LARGE) {
                    FAIL(IMCODEC_SCAN_MALFORMED, value_at, "length over 2^31-1");
                }
                FAIL(IMCODEC_SCAN_TRUNCATED, value_at, ENDS("a length prefix"));
            }
            if (n > end - pos) {
                FAIL(IMCODEC_SCAN_TRUNCATED, value_at,
                     n > len - pos ? "length runs past the end of the input"
                                   : "length runs past the end of the enclosing message");
            }
            const size_t payload_at = pos;
            pos += n;
            if (payload_at - value_at > 5) {
                // A padded length protobuf-c cannot read (only with long_lengths): imcodec_transcode
                // writes a known field's again, and wraps an unknown field, whose bytes are kept
                // as they came (as upb keeps them).
                if (field != NULL) {
                    long_length_fields++;
                } else if (!wrap) {
                    size_t wrapper_index;
                    if (find_field(cur, IMCODEC_WRAPPER_FIELD_NUMBER, &wrapper_index) != NULL) {
                        FAIL(IMCODEC_SCAN_UNSUPPORTED, value_at,
                             "a length prefix over 5 bytes in a message that declares field 536870911");
                    }
                    wrap = 1;
                    wraps++;
                }
            }
            if (field == NULL) {
                break;  // unknown: skipped, never descended into
            }

            const int repeated = field->label == PROTOBUF_C_LABEL_REPEATED;
            if (estimate && repeated && repeated_first(top, index)) {
                arena += 16;
                value += 48;
            }
            switch (expected) {
            case WT_LEN:
                if (field->type == PROTOBUF_C_TYPE_MESSAGE) {
                    if (depth >= max_depth) {
                        FAIL(IMCODEC_SCAN_TOO_DEEP, tag_at, "nesting deeper than max_depth");
                    }
                    if (field->descriptor == NULL) {
                        FAIL(IMCODEC_SCAN_UNSUPPORTED, tag_at, "message field without a descriptor");
                    }
                    cur = field->descriptor;
                    if (estimate && !duplicate) {
                        arena += message_struct_bytes(cur);
                        if (repeated) {
                            arena += 8;
                            value += cached_element_cost(&costs, o, cur);
                        }
                    }
                    messages++;
                    end = pos;
                    top = &stack[depth];
                    top->descriptor = cur;
                    top->end = end;
                    top->singular_messages_seen = 0;
                    if (estimate) {
                        top->repeated_seen = 0;
                        top->tags = 0;
                        top->unknowns = 0;
                    }
                    depth++;
                    if (depth > depth_seen) {
                        depth_seen = depth;
                    }
                    pos = payload_at;  // continue inside the sub-message
                } else if (field->type == PROTOBUF_C_TYPE_STRING) {
                    // protobuf-c keeps these (map keys and values) as NUL-terminated C strings.
                    const size_t bad = utf8_scan(data + payload_at, n, 1);
                    if (bad != n) {
                        if (data[payload_at + bad] == 0) {
                            FAIL(IMCODEC_SCAN_UNSUPPORTED, payload_at + bad,
                                 "U+0000 in a map key or value (a C string)");
                        }
                        FAIL(IMCODEC_SCAN_INVALID_UTF8, payload_at + bad,
                             "invalid UTF-8 in a map key or value");
                    }
                    if (estimate) {
                        arena += R16(n + 1) + (repeated ? 8 : 0);
                        value += value_string_bytes(n, 0) + (repeated ? 16 : 0);
                    }
                } else {
                    const int is_string = imcodec_field_is_utf8_bytes(field);
                    if (is_string) {
                        const size_t bad = utf8_scan(data + payload_at, n, 0);
                        if (bad != n) {
                            FAIL(IMCODEC_SCAN_INVALID_UTF8, payload_at + bad,
                                 "invalid UTF-8 in a string field");
                        }
                    }
                    if (estimate) {
                        arena += R16(n) + (repeated ? 16 : 0);
                        value += value_string_bytes(n, !is_string) + (repeated ? 16 : 0);
                    }
                }
                break;

            case WT_FIXED32:
            case WT_FIXED64: {
                // Packed fixed-size elements. The tag counted the first one.
                const size_t size = expected == WT_FIXED32 ? 4 : 8;
                const size_t elements = n / size;
                if (elements > 1) {
                    // count <= max_fields here; element k (k >= 1) brings the count to count + k.
                    const size_t room = max_fields - count;
                    if (elements - 1 > room) {
                        count += room + 1;
                        FAIL(IMCODEC_SCAN_TOO_MANY_FIELDS, payload_at + (room + 1) * size,
                             "more than max_fields fields");
                    }
                    count += elements - 1;
                }
                if (n % size != 0) {
                    FAIL(IMCODEC_SCAN_MALFORMED, payload_at + elements * size,
                         size == 4 ? "packed fixed32 payload is not whole elements"
                                   : "packed fixed64 payload is not whole elements");
                }
                if (estimate) {
                    arena += elements * c_element_size(field->type);
                    value += elements * 8;
                }
                break;
            }

            default: {  // WT_VARINT: packed varints, each complete and at most 10 bytes
                size_t p = payload_at;
                size_t elements = 0;
                while (p < pos) {
                    const size_t element_at = p;
                    if (elements > 0 && ++count > max_fields) {
                        FAIL(IMCODEC_SCAN_TOO_MANY_FIELDS, element_at, "more than max_fields fields");
                    }
                    elements++;
                    const int vr = skip_varint(data, &p, pos);
                    if (vr != READ_OK) {
                        FAIL(IMCODEC_SCAN_MALFORMED, element_at,
                             vr == READ_TOO_LONG ? "packed varint longer than 10 bytes"
                                                 : "packed payload ends inside a varint");
                    }
                }
                if (estimate) {
                    arena += elements * c_element_size(field->type);
                    value += elements * 8;
                }
                break;
            }
            }
            break;
        }
        }

        if (!estimate) {
            continue;
        }
        if (field == NULL) {
            // An unknown field: protobuf-c copies the bytes after the tag (for a wrapped field,
            // the wrapper's length prefix and the whole original field); the value keeps the
            // original field, tag included.
            const size_t field_bytes = pos - tag_at;
            const size_t kept = wrap ? varint_size(field_bytes) + field_bytes : pos - value_at;
            if (top->unknowns++ == 0) {
                arena += 16;
                value += 64;
            }
            arena += 24 + R16(kept);
            value += field_bytes;
        } else if (wire_type != WT_LEN && field->label == PROTOBUF_C_LABEL_REPEATED) {
            // One element of a repeated scalar that is not packed.
            if (repeated_first(top, index)) {
                arena += 16;
                value += 48;
            }
            arena += c_element_size(field->type);
            value += 8;
        }
        CHECK_MEMORY(tag_at);
    }

    CHECK_MEMORY(0);  // an empty message (the top level's struct)
#undef FAIL
#undef ENDS
#undef CHECK_MEMORY

    result.status = IMCODEC_SCAN_OK;
    result.offset = len;
    result.field_number = 0;
    result.message_name = descriptor->name;
    result.detail = NULL;
    result.field_count = count;
    result.max_depth_seen = depth_seen;
    result.wrap_count = wraps;
    result.merge_count = merges;
    result.long_length_count = long_length_fields;
    result.message_count = messages;
    result.arena_bytes = arena;
    result.value_bytes = value;
    result.estimated = estimate;
    return result;

fail:
    result.status = status;
    result.offset = fail_at;
    result.field_number = status == IMCODEC_SCAN_TOO_MUCH_MEMORY ? 0 : number;
    result.message_name = cur != NULL ? cur->name : NULL;
    result.detail = detail;
    result.field_count = count;
    result.max_depth_seen = depth_seen;
    result.wrap_count = wraps;
    result.merge_count = merges;
    result.long_length_count = long_length_fields;
    result.message_count = messages;
    result.arena_bytes = arena;
    result.value_bytes = value;
    result.estimated = estimate;
    return result;
}

imcodec_scan_result imcodec_prescan(const ProtobufCMessageDescriptor *descriptor,
                                    const uint8_t *data, size_t len,
                                    uint32_t max_depth, size_t max_fields) {
    imcodec_scan_options options;
    memset(&options, 0, sizeof options);
    options.max_depth = max_depth;
    options.max_fields = max_fields;
    options.max_memory = SIZE_MAX;
    return scan_core(descriptor, data, len, &options, 0);
}

/// Whether no input of `len` bytes can pass the memory limit: len * bytes_per_input_byte +
/// fixed_bytes <= max_memory (see imcodec_scan_bound).
static inline int cannot_pass_limit(const imcodec_scan_options *o, size_t len) {
    if (o->bytes_per_input_byte == 0 || o->max_memory < o->fixed_bytes) {
        return 0;
    }
    return len <= (o->max_memory - o->fixed_bytes) / o->bytes_per_input_byte;
}

imcodec_scan_result imcodec_prescan_ex(const ProtobufCMessageDescriptor *descriptor,
                                       const uint8_t *data, size_t len,
                                       const imcodec_scan_options *options) {
    if (!(options->flags & IMCODEC_SCAN_ALWAYS_ESTIMATE) && cannot_pass_limit(options, len)) {
        return scan_core(descriptor, data, len, options, 0);
    }
    return scan_core(descriptor, data, len, options, 1);
}

// MARK: - The bound

/// The cost (arena + value) a field of `field`'s type can add for each of its bytes (at least 2:
/// a tag and a value byte, or a tag and a length prefix), slabs not included; see "Memory estimate".
static size_t field_cost_per_byte(const imcodec_scan_options *o, const ProtobufCFieldDescriptor *field) {
    if (field->type == PROTOBUF_C_TYPE_MESSAGE && field->descriptor != NULL) {
        size_t cost = message_struct_bytes(field->descriptor);
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            cost += 8 + 16 + element_cost(o, field->descriptor) + 48;
        }
        return (cost + 1) / 2;
    }
    // A string or bytes field of n bytes: at most R16(n) + 16 + 16 in the arena and
    // R16(n + 48) + 16 + 48 in the value, 2n + 174 bytes for n + 2 input bytes: at most 87 per byte.
    // An unknown field of b >= 2 bytes (wrapped or not): 24 + R16(b + 5) + 16 + 64 + b <= 2b + 124,
    // at most 64 per byte. A repeated scalar: 80 for 2 bytes. A packed element: 16 per byte.
    return 96;
}

void imcodec_scan_bound(imcodec_scan_options *options, const ProtobufCMessageDescriptor *const *roots,
                        size_t root_count) {
    // Every message type reachable from the roots (a small schema: a fixed table, no heap).
    enum { MAX_TYPES = 512 };
    const ProtobufCMessageDescriptor *seen[MAX_TYPES];
    size_t n_seen = 0;
    size_t next = 0;
    size_t per_byte = 96;
    size_t largest_struct = 0;
    for (size_t i = 0; i < root_count && n_seen < MAX_TYPES; i++) {
        int known = 0;
        for (size_t j = 0; j < n_seen; j++) {
            known |= seen[j] == roots[i];
        }
        if (!known && roots[i] != NULL) {
            seen[n_seen++] = roots[i];
        }
    }
    while (next < n_seen) {
        const ProtobufCMessageDescriptor *desc = seen[next++];
        const size_t size = message_struct_bytes(desc);
        if (size > largest_struct) {
            largest_struct = size;
        }
        for (unsigned f = 0; f < desc->n_fields; f++) {
            const ProtobufCFieldDescriptor *field = &desc->fields[f];
            const size_t cost = field_cost_per_byte(options, field);
            if (cost > per_byte) {
                per_byte = cost;
            }
            if (field->type != PROTOBUF_C_TYPE_MESSAGE || field->descriptor == NULL) {
                continue;
            }
            int known = 0;
            for (size_t j = 0; j < n_seen; j++) {
                known |= seen[j] == field->descriptor;
            }
            if (!known) {
                if (n_seen == MAX_TYPES) {
                    options->bytes_per_input_byte = 0;  // too many types: always estimate
                    options->fixed_bytes = 0;
                    return;
                }
                seen[n_seen++] = field->descriptor;
            }
        }
    }
    // ScannedMember slabs: under 64 t + 1024 bytes for a message of t >= 17 tags, so under 63
    // bytes per tag, and a tag comes with at least 2 input bytes; 64 per byte covers them.
    options->bytes_per_input_byte = 64 + per_byte;
    // The top-level message's struct, and slack.
    options->fixed_bytes = largest_struct + 1024;
}
