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
// - every schema `string` (see imcodec_string_field.h) valid UTF-8; a PROTOBUF_C_TYPE_STRING, which
//   protobuf-c keeps as a C string, must also be free of U+0000 (IMCodec's generated code has none:
//   map keys and values are rewritten to bytes, see Scripts/postprocess-protoc-c.py);
// - the number of fields (each occurrence, each packed element) at most `max_fields`;
// - a known field must arrive with its declared wire type (or packed, for repeated scalars);
// - a singular sub-message must not occur twice in one message (protobuf-c 1.4.1 merges wrongly),
//   unless IMCODEC_SCAN_MERGE_REPEATS asks to count such occurrences for imcodec_transcode.
//
// imcodec_prescan_ex (what IMCodec decodes with) adds two things:
//
// - With IMCODEC_SCAN_MISMATCH_AS_UNKNOWN, a known field with the wrong wire type is not an error
//   but an unknown field, as in Google's parsers (upb, C++, Java). protobuf-c rejects such input,
//   so the caller rewrites it first with imcodec_transcode: `wrap_count` says how many fields need
//   it. Likewise, with IMCODEC_SCAN_MERGE_REPEATS, `merge_count` counts repeated singular
//   sub-messages, which imcodec_transcode merges; with IMCODEC_SCAN_LONG_LENGTHS,
//   `long_length_count` counts length prefixes of 6 to 10 bytes, which protobuf-c cannot read and
//   imcodec_transcode shortens (all three 0: decode the input as it is).
// - A memory estimate: an upper bound of the bytes protobuf-c will take from its arena for this
//   input (`arena_bytes`) plus the heap the caller's value will take (`value_bytes`, from a cost
//   model the caller describes), checked against `max_memory` as the scan goes (TOO_MUCH_MEMORY at
//   the field where the sum passes it). So an input whose decoded form would be too large is
//   refused before anything is allocated. See prescan.c, "Memory estimate", for the model.
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
    /// Well-formed input protobuf-c cannot decode faithfully: U+0000 in a PROTOBUF_C_TYPE_STRING
    /// field (kept as a C string; IMCodec's schemas have none, see Scripts/postprocess-protoc-c.py),
    /// or, without IMCODEC_SCAN_MERGE_REPEATS, a singular sub-message that occurs twice (protobuf-c
    /// merges it incorrectly).
    IMCODEC_SCAN_UNSUPPORTED = 7,
    /// The memory estimate passes max_memory (imcodec_prescan_ex only).
    IMCODEC_SCAN_TOO_MUCH_MEMORY = 8,
} imcodec_scan_status;

/// imcodec_scan_options.flags: a known field with the wrong wire type counts in `wrap_count`
/// instead of failing with WIRE_TYPE_MISMATCH; so does a field numbered
/// IMCODEC_WRAPPER_FIELD_NUMBER (see imcodec_transcode.h). Also makes any message that declares
/// that number UNSUPPORTED when something in it would need wrapping.
#define IMCODEC_SCAN_MISMATCH_AS_UNKNOWN 1u

/// imcodec_scan_options.flags: a singular message field that occurs more than once in one message
/// (which protobuf-c 1.4.1 merges wrongly) counts in `merge_count` instead of failing with
/// UNSUPPORTED; imcodec_transcode then merges the occurrences as Google's parsers do. The memory
/// estimate of such input is a first check only: scan the rewritten bytes for the real one (see
/// "Memory estimate" in prescan.c).
#define IMCODEC_SCAN_MERGE_REPEATS 4u

/// imcodec_scan_options.flags: a length prefix may take 6 to 10 bytes (padded with 0x80 bytes), as
/// upb, Java and Go read it (C++ and protobuf-c stop at 5). A known field with one counts in
/// `long_length_count`, an unknown field with one in `wrap_count` (it is wrapped, so that its bytes
/// are kept as they came), and imcodec_transcode writes the known ones' prefixes in 5 bytes or
/// fewer. Use with IMCODEC_SCAN_MISMATCH_AS_UNKNOWN (whose wrappers IMCodec reads back).
#define IMCODEC_SCAN_LONG_LENGTHS 8u

/// imcodec_scan_options.flags: compute the memory estimate even when the input is too short to pass
/// max_memory (see imcodec_scan_options.bytes_per_input_byte).
#define IMCODEC_SCAN_ALWAYS_ESTIMATE 2u

/// The field number imcodec_transcode wraps fields in: 2^29-1, the largest legal one, which no
/// IMCodec schema uses.
#define IMCODEC_WRAPPER_FIELD_NUMBER 536870911u

/// What one element of a repeated message field costs the caller's value, beyond what its own
/// fields cost (for Swift: the array stride of the element type).
typedef struct {
    const ProtobufCMessageDescriptor *descriptor;
    size_t element_size;
} imcodec_element_cost;

/// Options of imcodec_prescan_ex.
typedef struct {
    /// As imcodec_prescan's max_depth (at most IMCODEC_PRESCAN_DEPTH_CAP is honoured).
    uint32_t max_depth;
    /// IMCODEC_SCAN_* flags.
    uint32_t flags;
    /// As imcodec_prescan's max_fields.
    size_t max_fields;
    /// Most bytes arena_bytes + value_bytes may reach; SIZE_MAX for no limit.
    size_t max_memory;
    /// Element costs of repeated message fields, sorted by descriptor address (may be NULL).
    const imcodec_element_cost *element_costs;
    size_t element_cost_count;
    /// The element cost of a message type not in element_costs (protobuf-c map entries: a Swift
    /// dictionary slot).
    size_t default_element_cost;
    /// An upper bound of the estimate per input byte, and its constant part (set by
    /// imcodec_scan_bound; 0: unknown). An input with len * bytes_per_input_byte + fixed_bytes <=
    /// max_memory cannot pass the limit, so it is scanned without the estimate, exactly as fast as
    /// imcodec_prescan (arena_bytes and value_bytes are then 0 and `estimated` is 0).
    size_t bytes_per_input_byte;
    size_t fixed_bytes;
} imcodec_scan_options;

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
    /// imcodec_prescan_ex: fields imcodec_transcode must wrap (0 without
    /// IMCODEC_SCAN_MISMATCH_AS_UNKNOWN). Counted up to the end, or up to the problem.
    size_t wrap_count;
    /// imcodec_prescan_ex with IMCODEC_SCAN_MERGE_REPEATS: occurrences of singular message fields
    /// after the first in their message (0: nothing to merge).
    size_t merge_count;
    /// imcodec_prescan_ex with IMCODEC_SCAN_LONG_LENGTHS: known fields whose length prefix takes
    /// more than 5 bytes (0: protobuf-c can read every length).
    size_t long_length_count;
    /// Known sub-message occurrences descended into (the top-level message not included).
    size_t message_count;
    /// Upper bound of the bytes protobuf_c_message_unpack takes from an imcodec_arena.
    size_t arena_bytes;
    /// Estimate of the heap of the caller's value (cost model in prescan.c).
    size_t value_bytes;
    /// Whether arena_bytes and value_bytes were computed.
    int estimated;
} imcodec_scan_result;

/// Checks `data[0..<len]` as an encoding of `descriptor` (see the header comment for the rules).
/// `max_depth` above IMCODEC_PRESCAN_DEPTH_CAP is treated as the cap.
imcodec_scan_result imcodec_prescan(const ProtobufCMessageDescriptor *descriptor,
                                    const uint8_t *data, size_t len,
                                    uint32_t max_depth, size_t max_fields);

/// imcodec_prescan with options: the same checks, plus the flags, the memory estimate and the
/// counts of imcodec_scan_result. With flags 0, max_memory SIZE_MAX and no element costs it fails
/// exactly where imcodec_prescan does.
imcodec_scan_result imcodec_prescan_ex(const ProtobufCMessageDescriptor *descriptor,
                                       const uint8_t *data, size_t len,
                                       const imcodec_scan_options *options);

/// Sets options->bytes_per_input_byte and fixed_bytes for every message type reachable from
/// roots[0..<root_count] (with options' element costs): no input of those types has an estimate
/// above len * bytes_per_input_byte + fixed_bytes. Computed once; no heap.
void imcodec_scan_bound(imcodec_scan_options *options, const ProtobufCMessageDescriptor *const *roots,
                        size_t root_count);

// MARK: - Transcoding (transcode.c)

typedef enum {
    IMCODEC_TRANSCODE_OK = 0,
    /// A transcoded sub-message or wrapper would be longer than 2^31-1 bytes (protobuf-c's limit).
    IMCODEC_TRANSCODE_TOO_LARGE = 1,
    /// The input is not what imcodec_prescan_ex accepted (a broken invariant: never on valid use).
    IMCODEC_TRANSCODE_INTERNAL = 2,
} imcodec_transcode_status;

/// One entry of imcodec_transcode's scratch space (a byte range of the input: a field occurrence or
/// a payload segment of a message being merged).
typedef struct {
    size_t payload_at;
    size_t end;
    size_t tag_at;
    uint32_t tag_len;
    uint32_t field;
} imcodec_transcode_segment;

/// The most bytes imcodec_transcode writes for an input of `len` bytes whose pre-scan counted
/// `message_count` sub-messages and `wrap_count` wrapped fields: len + 4 * message_count +
/// 10 * wrap_count, or SIZE_MAX when that overflows.
size_t imcodec_transcode_capacity(size_t len, size_t message_count, size_t wrap_count);

/// Rewrites input with wire-type mismatches, repeated singular sub-messages or length prefixes of
/// more than 5 bytes so that protobuf-c
/// decodes it as Google's parsers do (see transcode.c): each field the pre-scan counted in
/// `wrap_count` becomes a length-delimited field numbered IMCODEC_WRAPPER_FIELD_NUMBER whose payload
/// is the original field, and each singular message field that occurs more than once is written
/// once, with its occurrences merged, and each known field's length prefix takes at most 5 bytes.
/// Call it only on input that imcodec_prescan_ex accepted with IMCODEC_SCAN_MISMATCH_AS_UNKNOWN |
/// IMCODEC_SCAN_MERGE_REPEATS | IMCODEC_SCAN_LONG_LENGTHS and the same descriptor.
/// `scratch` must hold 2 * message_count + 1 entries, `out` imcodec_transcode_capacity() bytes.
/// Sets *out_len to the length of the rewritten input.
imcodec_transcode_status imcodec_transcode(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                                           size_t len, imcodec_transcode_segment *scratch, size_t scratch_count,
                                           uint8_t *out, size_t capacity, size_t *out_len);

/// Whether `data[0..<len]` is valid UTF-8 (RFC 3629).
int imcodec_utf8_valid(const uint8_t *data, size_t len);

/// The offset of the first byte of the first ill-formed UTF-8 sequence (RFC 3629) in
/// `data[0..<len]`, or `len` when all of it is valid: the validator the pre-scan runs on string
/// fields, for text that does not come through it (JSON given as bytes).
size_t imcodec_utf8_first_invalid(const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
