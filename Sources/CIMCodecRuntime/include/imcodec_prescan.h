// One pass over wire bytes before protobuf-c sees them.
//
// protobuf-c 1.4.1 recurses once per nested message with no limit (about 2,900 levels overflow an
// 8 MiB stack), does not check UTF-8, returns NULL without a reason, and allocates per field.
// imcodec_prescan walks the same bytes iteratively (an explicit stack, no recursion, no heap) with
// the message's protobuf-c descriptor and stops at the first problem, with its byte offset:
//
// - tags: field number 1 ... 2^29-1, wire type 0, 1, 2 or 5 (groups, 3 and 4, are rejected);
// - varints at most 10 bytes; fixed and length-delimited values inside the input and inside their
//   enclosing message; packed repeated payloads made of whole elements;
// - nesting depth of known sub-messages at most `max_depth` (the top-level message is depth 1);
// - every schema `string` (see imcodec_string_field.h) and map key/value valid UTF-8; map strings,
//   which protobuf-c keeps as C strings, must also be free of U+0000;
// - the number of fields (each occurrence, each packed element) at most `max_fields`;
// - a known field must arrive with its declared wire type (or packed, for repeated scalars);
// - a singular sub-message must not occur twice in one message (protobuf-c 1.4.1 merges wrongly).
#ifndef IMCODEC_PRESCAN_H
#define IMCODEC_PRESCAN_H

#include <stddef.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The deepest `max_depth` imcodec_prescan accepts (its explicit stack has this many frames).
#define IMCODEC_PRESCAN_DEPTH_CAP 512

typedef enum {
    IMCODEC_SCAN_OK = 0,
    /// The input ends (or a sub-message ends) inside a tag, varint, fixed value or declared length.
    IMCODEC_SCAN_TRUNCATED = 1,
    /// Not protobuf: over-long varint, field number 0 or > 2^29-1, wire type 3, 4, 6 or 7,
    /// a length over 2^31-1, a packed payload that is not whole elements.
    IMCODEC_SCAN_MALFORMED = 2,
    /// A string field holds bytes that are not UTF-8 (RFC 3629: no overlongs, no surrogates).
    IMCODEC_SCAN_INVALID_UTF8 = 3,
    /// Known sub-messages nest deeper than max_depth.
    IMCODEC_SCAN_TOO_DEEP = 4,
    /// More than max_fields fields.
    IMCODEC_SCAN_TOO_MANY_FIELDS = 5,
    /// A known field arrived with a wire type other than its declared one.
    IMCODEC_SCAN_WIRE_TYPE_MISMATCH = 6,
    /// Well-formed input protobuf-c cannot decode faithfully: U+0000 in a map key or value (kept as
    /// C strings), or a singular sub-message that occurs twice (protobuf-c merges it incorrectly).
    IMCODEC_SCAN_UNSUPPORTED = 7,
} imcodec_scan_status;

typedef struct {
    imcodec_scan_status status;
    /// Byte offset, from the start of the input, of the first byte of the problem.
    size_t offset;
    /// The field being read when it failed (0 when none).
    uint32_t field_number;
    /// Full name of the message being read when it failed (a static string), or NULL.
    const char *message_name;
    /// A short static phrase that says what is wrong, or NULL when status is OK.
    const char *detail;
    /// Fields counted (all of them when status is OK).
    size_t field_count;
    /// The deepest nesting reached.
    uint32_t max_depth_seen;
} imcodec_scan_result;

/// Checks `data[0..<len]` as an encoding of `descriptor` (see the header comment for the rules).
/// `max_depth` above IMCODEC_PRESCAN_DEPTH_CAP is treated as the cap.
imcodec_scan_result imcodec_prescan(const ProtobufCMessageDescriptor *descriptor,
                                    const uint8_t *data, size_t len,
                                    uint32_t max_depth, size_t max_fields);

/// Whether `data[0..<len]` is valid UTF-8 (RFC 3629).
int imcodec_utf8_valid(const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
