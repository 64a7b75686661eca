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
// on the C stack (16 bytes each on 64-bit targets, 8 KiB in all):
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
// Like protobuf-c: a length prefix is at most 5 bytes (a longer, zero-padded one is MALFORMED,
// where a generic varint may take 10), so that OK here means protobuf-c can read every length.
// Stricter than protobuf-c, on purpose: a 5-byte tag with bits above 32 is MALFORMED (protobuf-c
// drops them and reads another field number); field number 0 in a multi-byte tag is MALFORMED
// (protobuf-c keeps it as an unknown field); a BOOL with a wire type other than varint is a
// mismatch (protobuf-c ignores the wire type of bools); U+0000 in a C string is UNSUPPORTED
// (protobuf-c would silently cut the string there).
//
// Refused although well-formed (UNSUPPORTED): a singular sub-message that occurs twice in one
// message (see singular_message_repeats), and U+0000 in a map key or value.
//
// Not checked: proto2 `required` fields (the schemas are proto3), enum values (open in proto3).
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
        // ASCII fast path, 8 bytes at a time. For C strings a byte must also be non-zero:
        // (w - 0x01..01) sets a byte's high bit for the lowest zero byte (the borrow), and never
        // when every byte is 0x01 ... 0x7F.
        if (reject_nul) {
            while (len - i >= 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (((w | (w - LOW_ONES)) & HIGH_BITS) != 0) {
                    break;
                }
                i += 8;
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
        }
        if (i == len) {
            break;
        }

        const uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0 && reject_nul) {
                return i;
            }
            i += 1;
            continue;
        }
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

/// Reads a length prefix: a varint of at most 5 bytes (as protobuf-c requires) whose value is at
/// most 2^31-1.
static inline int read_length(const uint8_t *data, size_t *pos, size_t end, size_t *out) {
    size_t p = *pos;
    if (p < end && data[p] < 0x80) {
        *out = data[p];
        *pos = p + 1;
        return READ_OK;
    }
    uint64_t value = 0;
    for (unsigned i = 0; i < 5; i++, p++) {
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

/// Finds field `number` in `desc`: first where it sits when numbers are dense from 1, else by
/// protobuf-c's binary search over the number ranges.
static inline const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *desc,
                                                          uint32_t number) {
    if (number - 1 < desc->n_fields && desc->fields[number - 1].id == number) {
        return &desc->fields[number - 1];
    }
    return protobuf_c_message_descriptor_get_field(desc, number);
}

// MARK: - The pass

typedef struct {
    const ProtobufCMessageDescriptor *descriptor;
    size_t end;  // absolute offset one past the message's last byte
    // Bit i: the singular message field descriptor->fields[i] has occurred in this message.
    // (Scripts/protoc-gen-imcodec-swift refuses schemas with messages of more than 64 fields.)
    uint64_t singular_messages_seen;
} scan_frame;

// A singular message field that occurs twice must be merged (protobuf's rule for concatenated
// messages). protobuf-c 1.4.1 gets that wrong: merging lets the second occurrence's zero proto3
// scalars overwrite the first's values, and a oneof member is replaced instead of merged. Rather
// than decode such input differently from Google's parsers, the pre-scan refuses it (UNSUPPORTED).
// A oneof member resets the record of its siblings, since setting another member clears the oneof.
static int singular_message_repeats(scan_frame *frame, const ProtobufCFieldDescriptor *field) {
    const ProtobufCMessageDescriptor *desc = frame->descriptor;
    const size_t index = (size_t)(field - desc->fields);
    if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
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

imcodec_scan_result imcodec_prescan(const ProtobufCMessageDescriptor *descriptor,
                                    const uint8_t *data, size_t len,
                                    uint32_t max_depth, size_t max_fields) {
    imcodec_scan_result result;
    memset(&result, 0, sizeof result);

    scan_frame stack[IMCODEC_PRESCAN_DEPTH_CAP];
    if (max_depth > IMCODEC_PRESCAN_DEPTH_CAP) {
        max_depth = IMCODEC_PRESCAN_DEPTH_CAP;
    }

    const ProtobufCMessageDescriptor *cur = descriptor;  // == stack[depth - 1].descriptor
    size_t end = len;                                     // == stack[depth - 1].end
    uint32_t depth = 1;
    uint32_t depth_seen = 1;
    size_t pos = 0;
    size_t count = 0;
    uint32_t number = 0;

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

    for (;;) {
        if (pos == end) {
            if (depth == 1) {
                break;
            }
            depth--;
            cur = stack[depth - 1].descriptor;
            end = stack[depth - 1].end;
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

        // -- Field and wire type --------------------------------------------------------------
        const ProtobufCFieldDescriptor *field = find_field(cur, number);
        unsigned expected = WT_NONE;
        if (field != NULL) {
            if ((unsigned)field->type > PROTOBUF_C_TYPE_MESSAGE) {
                FAIL(IMCODEC_SCAN_UNSUPPORTED, tag_at, "unknown field type in the descriptor");
            }
            expected = expected_wire_type[field->type];
            if (wire_type != expected &&
                !(wire_type == WT_LEN && field->label == PROTOBUF_C_LABEL_REPEATED)) {
                FAIL(IMCODEC_SCAN_WIRE_TYPE_MISMATCH, tag_at,
                     mismatch_detail[wire_index(wire_type)][wire_index(expected)]);
            }
            if (singular_message_repeats(&stack[depth - 1], field)) {
                FAIL(IMCODEC_SCAN_UNSUPPORTED, tag_at,
                     "a singular sub-message occurs twice (merging it is not supported)");
            }
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
            const int r = read_length(data, &pos, end, &n);
            if (r != READ_OK) {
                if (r == READ_TOO_LONG) {
                    FAIL(IMCODEC_SCAN_MALFORMED, value_at, "length prefix longer than 5 bytes");
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
            if (field == NULL) {
                break;  // unknown: skipped, never descended into
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
                    end = pos;
                    stack[depth].descriptor = cur;
                    stack[depth].end = end;
                    stack[depth].singular_messages_seen = 0;
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
                } else if (imcodec_field_is_utf8_bytes(field)) {
                    const size_t bad = utf8_scan(data + payload_at, n, 0);
                    if (bad != n) {
                        FAIL(IMCODEC_SCAN_INVALID_UTF8, payload_at + bad,
                             "invalid UTF-8 in a string field");
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
                break;
            }

            default: {  // WT_VARINT: packed varints, each complete and at most 10 bytes
                size_t p = payload_at;
                int first = 1;
                while (p < pos) {
                    const size_t element_at = p;
                    if (!first && ++count > max_fields) {
                        FAIL(IMCODEC_SCAN_TOO_MANY_FIELDS, element_at, "more than max_fields fields");
                    }
                    first = 0;
                    const int vr = skip_varint(data, &p, pos);
                    if (vr != READ_OK) {
                        FAIL(IMCODEC_SCAN_MALFORMED, element_at,
                             vr == READ_TOO_LONG ? "packed varint longer than 10 bytes"
                                                 : "packed payload ends inside a varint");
                    }
                }
                break;
            }
            }
            break;
        }
        }
    }
#undef FAIL
#undef ENDS

    result.status = IMCODEC_SCAN_OK;
    result.offset = len;
    result.field_number = 0;
    result.message_name = descriptor->name;
    result.detail = NULL;
    result.field_count = count;
    result.max_depth_seen = depth_seen;
    return result;

fail:
    result.status = status;
    result.offset = fail_at;
    result.field_number = number;
    result.message_name = cur != NULL ? cur->name : NULL;
    result.detail = detail;
    result.field_count = count;
    result.max_depth_seen = depth_seen;
    return result;
}
