// Marks the schema's `string` fields in protobuf-c descriptors.
//
// Every `string` field in Schemas/ carries `[(pb_c_field).string_as_bytes = true]`, so protoc-c
// describes it as PROTOBUF_C_TYPE_BYTES (a length, not a NUL-terminated char *). protoc-c 1.4.1
// then sets its `default_value` to `&protobuf_c_empty_string`, a one-byte char array that the
// runtime reads as a 16-byte ProtobufCBinaryData (an out-of-bounds read on every duplicate field
// and in free_unpacked). Scripts/generate-schemas rewrites that default to the symbol below: a real,
// empty ProtobufCBinaryData. It also lets IMCodec tell a UTF-8 `string` (default_value == this
// symbol) from a `bytes` field (default_value == NULL) and validate the former.
#ifndef IMCODEC_STRING_FIELD_H
#define IMCODEC_STRING_FIELD_H

#include <protobuf-c/protobuf-c.h>

#ifdef __cplusplus
extern "C" {
#endif

extern const ProtobufCBinaryData imcodec_string_as_bytes_default;

/// Whether `field` is a schema `string` stored as bytes (see above).
static inline int imcodec_field_is_utf8_bytes(const ProtobufCFieldDescriptor *field) {
    return field->type == PROTOBUF_C_TYPE_BYTES && field->default_value == &imcodec_string_as_bytes_default;
}

#ifdef __cplusplus
}
#endif

#endif
