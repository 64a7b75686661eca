// imcodec_transcode: rewrites input that imcodec_prescan_ex accepted with a nonzero wrap_count so
// that protobuf-c 1.4.1 can unpack it (see imcodec_prescan.h for the API).
//
// Why
// ---
// Google's parsers keep a known field that arrives with the wrong wire type as an unknown field
// (same number, wire type and bytes) and write it back on encode. protobuf-c rejects the whole
// message instead. So each such field is hidden from protobuf-c inside a length-delimited field of
// number IMCODEC_WRAPPER_FIELD_NUMBER (2^29-1, which no IMCodec schema declares): protobuf-c keeps
// the wrapper as an unknown field, and IMCodec's unknown-field reader (Bridge/CRead.swift) unwraps
// it back to the original bytes. A genuine field with that number is wrapped too, so that every
// field of that number protobuf-c sees is a wrapper.
//
//   input:        ... [tag 1/LEN][len][ "x" ] ...              Frame.schema_version (a varint
//                                                               field) sent length-delimited
//   transcoded:   ... [tag 536870911/LEN][len = 3][tag 1/LEN][len]["x"] ...
//
// Wrapping makes a field longer, so every enclosing message's length prefix changes (and may
// itself grow by a byte, which changes its parent, and so on).
//
// Algorithm
// ---------
// Two iterative walks over the input with the same explicit stack as the pre-scan (no recursion;
// depth is at most the pre-scan's, which the caller bounded), descending exactly where the
// pre-scan descends: into known message fields that arrive length-delimited.
//
// 1. imcodec_transcode_size: each known sub-message occurrence gets the next index in pre-order
//    when it is entered; when it ends, its new payload length is stored at that index (`sizes`,
//    message_count entries from the pre-scan) and added to its parent: unchanged
//    (new == old length) it keeps its original bytes, prefix included; changed, it gets a new
//    minimal length prefix. A wrapped field adds 5 (the wrapper's tag) + the size of its length.
// 2. imcodec_transcode_write: walks again, reading `sizes` in the same pre-order, and copies the
//    input in runs: a run ends where the output differs from the input (the length prefix of a
//    changed message, the start of a wrapped field), the new bytes are written, and the next run
//    starts after the old prefix (or at the wrapped field itself, whose bytes follow the wrapper's
//    tag and length unchanged).
//
// Both are O(len) in time; the output and `sizes` are the caller's (IMCodec takes them from the
// decode's arena and counts them against maxDecodedMemory). Offsets in errors are the pre-scan's,
// on the original input: after a successful pre-scan these functions fail only on a broken
// invariant (IMCODEC_TRANSCODE_INTERNAL) or a sub-message that would pass protobuf-c's length limit
// of 2^31-1 (IMCODEC_TRANSCODE_TOO_LARGE).
#include "imcodec_prescan.h"

#include <string.h>

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

/// The wrapper's tag: field IMCODEC_WRAPPER_FIELD_NUMBER, wire type 2 (a 5-byte varint).
#define WRAPPER_TAG (((uint64_t)IMCODEC_WRAPPER_FIELD_NUMBER << 3) | WT_LEN)

static inline unsigned declared_wire_type(ProtobufCType type) {
    switch (type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return WT_FIXED32;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return WT_FIXED64;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return WT_LEN;
    default:
        return WT_VARINT;
    }
}

static inline const ProtobufCFieldDescriptor *lookup(const ProtobufCMessageDescriptor *desc, uint32_t number) {
    if (number - 1 < desc->n_fields && desc->fields[number - 1].id == number) {
        return &desc->fields[number - 1];
    }
    return protobuf_c_message_descriptor_get_field(desc, number);
}

/// Reads a varint of at most `max_bytes` bytes in data[*pos..<end); 0 on success.
static inline int read_varint(const uint8_t *data, size_t *pos, size_t end, unsigned max_bytes, uint64_t *out) {
    uint64_t v = 0;
    size_t p = *pos;
    for (unsigned i = 0; i < max_bytes; i++, p++) {
        if (p >= end) {
            return -1;
        }
        v |= (uint64_t)(data[p] & 0x7F) << (7 * i);
        if ((data[p] & 0x80) == 0) {
            *pos = p + 1;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *put_varint(uint8_t *out, uint64_t v) {
    while (v >= 0x80) {
        *out++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *out++ = (uint8_t)v;
    return out;
}

typedef struct {
    const ProtobufCMessageDescriptor *descriptor;
    size_t end;         // absolute end of the message's payload
    size_t field_at;    // its field's tag
    size_t tag_len;     // bytes of that tag
    size_t payload_at;  // its payload (after the length prefix)
    size_t new_len;     // pass 1: bytes of the transcoded payload so far
    size_t index;       // its pre-order index in `sizes`
} walk_frame;

/// What to do with a field.
typedef enum { FIELD_KEEP, FIELD_WRAP, FIELD_DESCEND } field_action;

/// Reads the field at data[*pos] inside `end` and decides as the pre-scan does: a known message
/// field arriving length-delimited is descended into (*pos is left at its payload, *payload_end
/// is its end); a known field with the wrong wire type (a repeated field may also come packed) or
/// an unknown field numbered IMCODEC_WRAPPER_FIELD_NUMBER is wrapped; anything else is kept.
/// *value_at is the first byte after the tag. Returns 0, or -1 for bytes the pre-scan refuses.
static inline int read_field(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t *pos,
                             size_t end, size_t *value_at, field_action *action,
                             const ProtobufCMessageDescriptor **child, size_t *payload_end) {
    uint64_t tag;
    if (read_varint(data, pos, end, 5, &tag) != 0 || tag > UINT32_MAX || (tag >> 3) == 0) {
        return -1;
    }
    *value_at = *pos;
    const uint32_t number = (uint32_t)(tag >> 3);
    const unsigned wire_type = (unsigned)(tag & 7);
    const ProtobufCFieldDescriptor *field = lookup(desc, number);
    int wrap;
    if (field != NULL) {
        if ((unsigned)field->type > PROTOBUF_C_TYPE_MESSAGE) {
            return -1;
        }
        wrap = wire_type != declared_wire_type(field->type) &&
               !(wire_type == WT_LEN && field->label == PROTOBUF_C_LABEL_REPEATED);
    } else {
        wrap = number == IMCODEC_WRAPPER_FIELD_NUMBER;
    }
    uint64_t v;
    switch (wire_type) {
    case WT_VARINT:
        if (read_varint(data, pos, end, 10, &v) != 0) {
            return -1;
        }
        break;
    case WT_FIXED64:
        if (end - *pos < 8) {
            return -1;
        }
        *pos += 8;
        break;
    case WT_FIXED32:
        if (end - *pos < 4) {
            return -1;
        }
        *pos += 4;
        break;
    case WT_LEN:
        if (read_varint(data, pos, end, 5, &v) != 0 || v > end - *pos) {
            return -1;
        }
        if (!wrap && field != NULL && field->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (field->descriptor == NULL) {
                return -1;
            }
            *action = FIELD_DESCEND;
            *child = field->descriptor;
            *payload_end = *pos + (size_t)v;
            return 0;
        }
        *pos += (size_t)v;
        break;
    default:
        return -1;
    }
    *action = wrap ? FIELD_WRAP : FIELD_KEEP;
    return 0;
}

/// The walk shared by both passes. Pass 1 (out == NULL) fills `sizes` and *out_len; pass 2 reads
/// `sizes` and writes out[0..<out_len].
static imcodec_transcode_status walk(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                                     size_t len, uint32_t *sizes, size_t message_count,
                                     uint8_t *out, size_t *out_len) {
    walk_frame stack[IMCODEC_PRESCAN_DEPTH_CAP];
    uint32_t depth = 1;
    size_t next_index = 0;
    size_t pos = 0;
    walk_frame *top = &stack[0];
    memset(top, 0, sizeof *top);
    top->descriptor = descriptor;
    top->end = len;

    // Pass 2: input bytes [run, ...) are still to be copied; `w` bytes have been written.
    size_t run = 0;
    size_t w = 0;
    const size_t capacity = out != NULL ? *out_len : 0;
#define FLUSH(upto)                                                        \
    do {                                                                   \
        const size_t n_ = (upto) - run;                                    \
        if (n_ > capacity - w) {                                           \
            return IMCODEC_TRANSCODE_INTERNAL;                             \
        }                                                                  \
        memcpy(out + w, data + run, n_);                                   \
        w += n_;                                                           \
    } while (0)
#define PUT_VARINT(v)                                                      \
    do {                                                                   \
        const uint64_t v_ = (v);                                           \
        if (varint_size(v_) > capacity - w) {                              \
            return IMCODEC_TRANSCODE_INTERNAL;                             \
        }                                                                  \
        w = (size_t)(put_varint(out + w, v_) - out);                       \
    } while (0)

    for (;;) {
        if (pos == top->end) {
            if (depth == 1) {
                break;
            }
            const walk_frame done = *top;
            depth--;
            top = &stack[depth - 1];
            if (out == NULL) {
                if (done.new_len > 0x7FFFFFFF) {
                    return IMCODEC_TRANSCODE_TOO_LARGE;
                }
                sizes[done.index] = (uint32_t)done.new_len;
                if (done.new_len == done.end - done.payload_at) {
                    top->new_len += done.end - done.field_at;  // unchanged: kept byte for byte
                } else {
                    // Its tag as it came, a minimal length prefix, the new payload.
                    top->new_len += done.tag_len + varint_size(done.new_len) + done.new_len;
                }
            }
            continue;
        }
        const size_t field_at = pos;
        size_t value_at = 0;
        field_action action = FIELD_KEEP;
        const ProtobufCMessageDescriptor *child = NULL;
        size_t payload_end = 0;
        if (read_field(top->descriptor, data, &pos, top->end, &value_at, &action, &child, &payload_end) != 0) {
            return IMCODEC_TRANSCODE_INTERNAL;
        }
        if (action == FIELD_DESCEND) {
            if (depth == IMCODEC_PRESCAN_DEPTH_CAP || next_index >= message_count) {
                return IMCODEC_TRANSCODE_INTERNAL;
            }
            const size_t index = next_index++;
            if (out != NULL && sizes[index] != payload_end - pos) {
                // Changed: copy up to the end of the tag, write the new length, skip the old one.
                FLUSH(value_at);
                PUT_VARINT(sizes[index]);
                run = pos;
            }
            walk_frame *next = &stack[depth++];
            next->descriptor = child;
            next->end = payload_end;
            next->field_at = field_at;
            next->tag_len = value_at - field_at;
            next->payload_at = pos;
            next->new_len = 0;
            next->index = index;
            top = next;
            continue;
        }
        const size_t field_bytes = pos - field_at;
        if (action == FIELD_WRAP) {
            if (field_bytes > 0x7FFFFFFF) {
                return IMCODEC_TRANSCODE_TOO_LARGE;
            }
            if (out == NULL) {
                top->new_len += varint_size(WRAPPER_TAG) + varint_size(field_bytes) + field_bytes;
            } else {
                // The wrapper's tag and length, then the field as it came (the next run).
                FLUSH(field_at);
                PUT_VARINT(WRAPPER_TAG);
                PUT_VARINT(field_bytes);
                run = field_at;
            }
        } else if (out == NULL) {
            top->new_len += field_bytes;
        }
    }
    if (next_index != message_count) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    if (out == NULL) {
        *out_len = top->new_len;
    } else {
        FLUSH(len);
        if (w != capacity) {
            return IMCODEC_TRANSCODE_INTERNAL;
        }
    }
    return IMCODEC_TRANSCODE_OK;
#undef FLUSH
#undef PUT_VARINT
}

imcodec_transcode_status imcodec_transcode_size(const ProtobufCMessageDescriptor *descriptor,
                                                const uint8_t *data, size_t len,
                                                uint32_t *sizes, size_t message_count,
                                                size_t *out_len) {
    if (descriptor == NULL || (data == NULL && len > 0) || (sizes == NULL && message_count > 0) || out_len == NULL) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    return walk(descriptor, data, len, sizes, message_count, NULL, out_len);
}

imcodec_transcode_status imcodec_transcode_write(const ProtobufCMessageDescriptor *descriptor,
                                                 const uint8_t *data, size_t len,
                                                 const uint32_t *sizes, size_t message_count,
                                                 uint8_t *out, size_t out_len) {
    if (descriptor == NULL || (data == NULL && len > 0) || (sizes == NULL && message_count > 0) ||
        (out == NULL && out_len > 0)) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    if (out == NULL) {
        return out_len == len ? IMCODEC_TRANSCODE_OK : IMCODEC_TRANSCODE_INTERNAL;
    }
    size_t capacity = out_len;
    return walk(descriptor, data, len, (uint32_t *)sizes, message_count, out, &capacity);
}
