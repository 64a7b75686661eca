// imcodec_transcode: rewrites input that imcodec_prescan_ex accepted with a nonzero wrap_count,
// merge_count or long_length_count so that protobuf-c 1.4.1 decodes it exactly as Google's parsers
// do (see imcodec_prescan.h for the API).
//
// Why
// ---
// Three kinds of well-formed input make protobuf-c depart from Google's parsers:
//
// 1. A known field that arrives with the wrong wire type. Google keeps it as an unknown field (same
//    number, wire type and bytes) and writes it back on encode; protobuf-c rejects the message. So
//    each such field is hidden from protobuf-c inside a length-delimited field numbered
//    IMCODEC_WRAPPER_FIELD_NUMBER (2^29-1, which no IMCodec schema declares): protobuf-c keeps the
//    wrapper as an unknown field, and IMCodec's unknown-field reader (CSeam/CRead.swift) unwraps it
//    back to the original bytes. A genuine field with that number is wrapped too, so that every
//    field of that number protobuf-c sees is a wrapper.
//
//      input:        ... [tag 1/LEN][len][ "x" ] ...       Frame.schema_version (a varint field)
//      transcoded:   ... [tag 536870911/LEN][len = 3][tag 1/LEN][len]["x"] ...
//
// 2. A singular message field that occurs more than once in one message. Protobuf defines parsing
//    as merging: the occurrences are merged as if their payloads were one (scalars: the last
//    wins; repeated fields and unknown fields: appended; sub-messages: merged again, recursively;
//    a oneof: the same member merges, a different member replaces it). protobuf-c 1.4.1 merges
//    wrongly (the second occurrence's zero proto3 scalars overwrite the first's values; a oneof
//    member is replaced even by itself). Since concatenating payloads IS merging, the rewrite
//    emits each such field once, with the concatenation of its occurrences' payloads, itself
//    rewritten the same way:
//
//      input:        [conv: {type: 1}] [text] [conv: {target: "g"}]       (Message, field 6 twice)
//      transcoded:   [text] [conv: {type: 1, target: "g"}]
//
//    The merged field is written after the message's other fields (protobuf-c fills a struct, so
//    only the order among occurrences of one field matters: repeated and unknown fields keep
//    theirs). A oneof member is emitted only if it is the oneof's last member in the input, and
//    then only its occurrences after the last occurrence of another member: exactly the state
//    Google's parsers end in.
//
// 3. A length prefix of 6 to 10 bytes (a short length padded with 0x80 bytes). upb, Java and Go read
//    it; protobuf-c (and C++) stop at 5 bytes. A known field's prefix is written again in its
//    shortest form (a sub-message's, like every rewritten message's, in 5 bytes); an unknown field
//    with one is wrapped as in 1, so that its bytes are written back as they came, as upb does.
//
// Algorithm
// ---------
// One recursive walk that writes the output front to back. A message is described by a list of
// segments (byte ranges of the input whose concatenation is its payload: one range, or the payloads
// of every occurrence being merged). For each message:
//
//   pass A  walk its segments' fields in order:
//             unknown or scalar field          copy its bytes as they came (a known field's
//                                              length prefix over 5 bytes written again)
//             wire-type mismatch / 2^29-1 /    write the wrapper's tag and length, then the field
//             unknown with a prefix over 5
//             repeated message field           copy the tag; rewrite the element recursively
//             singular message field           record the occurrence (no output yet)
//   pass B  for each recorded field, in the order of first occurrence: gather its valid
//           occurrences (oneof rule above) into a new segment list, copy the first one's tag and
//           rewrite the merged message recursively.
//
// A rewritten message's length is not known until its payload is written, so every length prefix
// the rewrite writes is 5 bytes, padded (0x80-continued): protobuf-c reads length prefixes of up
// to 5 bytes, padded or not, and the rewritten bytes are read by nothing else. Hence the output is
// at most len + 4 * message_count + 10 * wrap_count bytes (a message keeps at most its first
// occurrence's tag and gains at most 4 prefix bytes; a wrapper adds a 5-byte tag and a length of at
// most 5 bytes; merging only drops bytes): imcodec_transcode_capacity.
//
// Cost and bounds: every input byte is copied or walked at most once per pass; gathering scans a
// message's records once per distinct field, so O(len * 64) at worst (messages have at most 64
// fields; the generator refuses more). The records live in the caller's scratch array, used as a
// stack: a message's records and the segment lists gathered from them are released when it is
// done, so 2 * message_count + 1 entries always suffice. The recursion is as deep as the input's
// nesting (the pre-scan bounded it), with a small frame per level, which is less than protobuf-c
// itself takes for the same input right after; the caller runs deep input on a thread with a large
// stack (CSeam/WireCodec.swift). Offsets in errors are the pre-scan's, on the original input:
// after a successful pre-scan this fails only on a broken invariant (IMCODEC_TRANSCODE_INTERNAL) or
// a sub-message that would pass protobuf-c's length limit of 2^31-1 (IMCODEC_TRANSCODE_TOO_LARGE).
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


/// Most oneofs a message may declare (Scripts/protoc-gen-imcodec-swift refuses schemas with more).
#define MAX_ONEOFS 16

/// A byte range of the input: a field occurrence (pass A's records) or a payload segment.
typedef imcodec_transcode_segment segment;

#define RECORD_DONE UINT32_MAX

typedef struct {
    const uint8_t *data;
    uint8_t *out;
    size_t capacity;
    size_t w;            // bytes written
    segment *scratch;
    size_t scratch_count;
    size_t used;         // scratch entries in use (a stack)
} rewriter;

/// Where the last run of a oneof's members started, and which member it is.
typedef struct {
    unsigned quantifier_offset;
    uint32_t member;     // field index of the oneof's last member seen
    size_t run_start;    // first record index of that member's current run
} oneof_state;

static inline imcodec_transcode_status put(rewriter *r, const uint8_t *bytes, size_t n) {
    if (n > r->capacity - r->w) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    memcpy(r->out + r->w, bytes, n);
    r->w += n;
    return IMCODEC_TRANSCODE_OK;
}

static inline imcodec_transcode_status put_varint_checked(rewriter *r, uint64_t v) {
    if (varint_size(v) > r->capacity - r->w) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    r->w = (size_t)(put_varint(r->out + r->w, v) - r->out);
    return IMCODEC_TRANSCODE_OK;
}

static imcodec_transcode_status rewrite_message(rewriter *r, const ProtobufCMessageDescriptor *desc,
                                                const segment *segments, size_t segment_count, unsigned depth);

/// Writes `tag` (copied from the input), a 5-byte length prefix, and the rewritten message made of
/// `segments`; then fills the prefix in.
static imcodec_transcode_status rewrite_field(rewriter *r, const ProtobufCMessageDescriptor *child,
                                              const segment *tag, const segment *segments,
                                              size_t segment_count, unsigned depth) {
    imcodec_transcode_status status = put(r, r->data + tag->tag_at, tag->tag_len);
    if (status != IMCODEC_TRANSCODE_OK) {
        return status;
    }
    if (r->capacity - r->w < 5) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    const size_t prefix_at = r->w;
    r->w += 5;
    status = rewrite_message(r, child, segments, segment_count, depth + 1);
    if (status != IMCODEC_TRANSCODE_OK) {
        return status;
    }
    const size_t n = r->w - prefix_at - 5;
    if (n > 0x7FFFFFFF) {
        return IMCODEC_TRANSCODE_TOO_LARGE;
    }
    uint8_t *p = r->out + prefix_at;
    p[0] = (uint8_t)(0x80 | (n & 0x7F));
    p[1] = (uint8_t)(0x80 | ((n >> 7) & 0x7F));
    p[2] = (uint8_t)(0x80 | ((n >> 14) & 0x7F));
    p[3] = (uint8_t)(0x80 | ((n >> 21) & 0x7F));
    p[4] = (uint8_t)(n >> 28);
    return IMCODEC_TRANSCODE_OK;
}

static imcodec_transcode_status rewrite_message(rewriter *r, const ProtobufCMessageDescriptor *desc,
                                                const segment *segments, size_t segment_count, unsigned depth) {
    if (depth > IMCODEC_PRESCAN_DEPTH_CAP) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    const uint8_t *data = r->data;
    const size_t base = r->used;
    oneof_state oneofs[MAX_ONEOFS];
    unsigned oneof_count = 0;
    imcodec_transcode_status status;

    // Pass A: everything but the singular message fields, in order.
    for (size_t s = 0; s < segment_count; s++) {
        size_t pos = segments[s].payload_at;
        const size_t end = segments[s].end;
        while (pos < end) {
            const size_t field_at = pos;
            uint64_t tag;
            if (read_varint(data, &pos, end, 5, &tag) != 0 || tag > UINT32_MAX || (tag >> 3) == 0) {
                return IMCODEC_TRANSCODE_INTERNAL;
            }
            const size_t value_at = pos;
            const uint32_t number = (uint32_t)(tag >> 3);
            const unsigned wire_type = (unsigned)(tag & 7);
            const ProtobufCFieldDescriptor *field = lookup(desc, number);
            int wrap;
            if (field != NULL) {
                if ((unsigned)field->type > PROTOBUF_C_TYPE_MESSAGE) {
                    return IMCODEC_TRANSCODE_INTERNAL;
                }
                wrap = wire_type != declared_wire_type(field->type) &&
                       !(wire_type == WT_LEN && field->label == PROTOBUF_C_LABEL_REPEATED);
            } else {
                wrap = number == IMCODEC_WRAPPER_FIELD_NUMBER;
            }
            uint64_t v;
            size_t payload_at = 0;
            switch (wire_type) {
            case WT_VARINT:
                if (read_varint(data, &pos, end, 10, &v) != 0) {
                    return IMCODEC_TRANSCODE_INTERNAL;
                }
                break;
            case WT_FIXED64:
                if (end - pos < 8) {
                    return IMCODEC_TRANSCODE_INTERNAL;
                }
                pos += 8;
                break;
            case WT_FIXED32:
                if (end - pos < 4) {
                    return IMCODEC_TRANSCODE_INTERNAL;
                }
                pos += 4;
                break;
            case WT_LEN:
                if (read_varint(data, &pos, end, 10, &v) != 0 || v > end - pos) {
                    return IMCODEC_TRANSCODE_INTERNAL;
                }
                payload_at = pos;
                pos += (size_t)v;
                // A length prefix of more than 5 bytes: an unknown field's is kept as it came,
                // wrapped (as the pre-scan counted it), a known field's is written again.
                wrap |= field == NULL && payload_at - value_at > 5;
                break;
            default:
                return IMCODEC_TRANSCODE_INTERNAL;
            }
            const size_t field_bytes = pos - field_at;
            if (wrap) {
                // The wrapper's tag and length, then the field as it came.
                if (field_bytes > 0x7FFFFFFF) {
                    return IMCODEC_TRANSCODE_TOO_LARGE;
                }
                if ((status = put_varint_checked(r, WRAPPER_TAG)) != IMCODEC_TRANSCODE_OK ||
                    (status = put_varint_checked(r, field_bytes)) != IMCODEC_TRANSCODE_OK ||
                    (status = put(r, data + field_at, field_bytes)) != IMCODEC_TRANSCODE_OK) {
                    return status;
                }
                continue;
            }
            if (field == NULL) {
                if ((status = put(r, data + field_at, field_bytes)) != IMCODEC_TRANSCODE_OK) {
                    return status;
                }
                continue;
            }
            const uint32_t index = (uint32_t)(field - desc->fields);
            if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                // A member other than the last one seen starts a new run: what came before is
                // replaced (cleared) when this member is set.
                unsigned k = 0;
                while (k < oneof_count && oneofs[k].quantifier_offset != field->quantifier_offset) {
                    k++;
                }
                if (k == oneof_count) {
                    if (oneof_count == MAX_ONEOFS) {
                        return IMCODEC_TRANSCODE_INTERNAL;
                    }
                    oneofs[k].quantifier_offset = field->quantifier_offset;
                    oneofs[k].member = RECORD_DONE;
                    oneof_count++;
                }
                if (oneofs[k].member != index) {
                    oneofs[k].member = index;
                    oneofs[k].run_start = r->used;
                }
            }
            if (field->type != PROTOBUF_C_TYPE_MESSAGE) {
                if (wire_type == WT_LEN && payload_at - value_at > 5) {
                    status = put(r, data + field_at, value_at - field_at);
                    if (status != IMCODEC_TRANSCODE_OK || (status = put_varint_checked(r, v)) != IMCODEC_TRANSCODE_OK ||
                        (status = put(r, data + payload_at, pos - payload_at)) != IMCODEC_TRANSCODE_OK) {
                        return status;
                    }
                    continue;
                }
                if ((status = put(r, data + field_at, field_bytes)) != IMCODEC_TRANSCODE_OK) {
                    return status;
                }
                continue;
            }
            if (field->descriptor == NULL) {
                return IMCODEC_TRANSCODE_INTERNAL;
            }
            segment occurrence = {payload_at, pos, field_at, (uint32_t)(value_at - field_at), index};
            if (field->label == PROTOBUF_C_LABEL_REPEATED) {
                status = rewrite_field(r, field->descriptor, &occurrence, &occurrence, 1, depth);
                if (status != IMCODEC_TRANSCODE_OK) {
                    return status;
                }
                continue;
            }
            if (r->used == r->scratch_count) {
                return IMCODEC_TRANSCODE_INTERNAL;
            }
            r->scratch[r->used++] = occurrence;
        }
    }

    // Pass B: each singular message field once, merged from its valid occurrences.
    const size_t top = r->used;
    for (size_t i = base; i < top; i++) {
        const uint32_t index = r->scratch[i].field;
        if (index == RECORD_DONE) {
            continue;
        }
        const ProtobufCFieldDescriptor *field = &desc->fields[index];
        size_t valid_from = base;
        if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            unsigned k = 0;
            while (k < oneof_count && oneofs[k].quantifier_offset != field->quantifier_offset) {
                k++;
            }
            if (k == oneof_count) {
                return IMCODEC_TRANSCODE_INTERNAL;
            }
            // Another member came after every occurrence of this one: none of them count.
            valid_from = oneofs[k].member == index ? oneofs[k].run_start : top;
        }
        const size_t gathered = r->used;
        for (size_t j = i; j < top; j++) {
            if (r->scratch[j].field != index) {
                continue;
            }
            if (j >= valid_from) {
                if (r->used == r->scratch_count) {
                    return IMCODEC_TRANSCODE_INTERNAL;
                }
                r->scratch[r->used++] = r->scratch[j];
            }
            r->scratch[j].field = RECORD_DONE;
        }
        if (r->used > gathered) {
            status = rewrite_field(r, field->descriptor, &r->scratch[gathered], &r->scratch[gathered],
                                   r->used - gathered, depth);
            if (status != IMCODEC_TRANSCODE_OK) {
                return status;
            }
        }
        r->used = gathered;
    }
    r->used = base;
    return IMCODEC_TRANSCODE_OK;
}

size_t imcodec_transcode_capacity(size_t len, size_t message_count, size_t wrap_count) {
    if (message_count > (SIZE_MAX - len) / 4) {
        return SIZE_MAX;
    }
    const size_t grown = len + 4 * message_count;
    if (wrap_count > (SIZE_MAX - grown) / 10) {
        return SIZE_MAX;
    }
    return grown + 10 * wrap_count;
}

imcodec_transcode_status imcodec_transcode(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                                           size_t len, imcodec_transcode_segment *scratch, size_t scratch_count,
                                           uint8_t *out, size_t capacity, size_t *out_len) {
    if (descriptor == NULL || (data == NULL && len > 0) || (scratch == NULL && scratch_count > 0) ||
        (out == NULL && capacity > 0) || out_len == NULL) {
        return IMCODEC_TRANSCODE_INTERNAL;
    }
    rewriter r = {data, out, capacity, 0, scratch, scratch_count, 0};
    const segment whole = {0, len, 0, 0, RECORD_DONE};
    const imcodec_transcode_status status = rewrite_message(&r, descriptor, &whole, 1, 1);
    if (status != IMCODEC_TRANSCODE_OK) {
        return status;
    }
    *out_len = r.w;
    return IMCODEC_TRANSCODE_OK;
}
