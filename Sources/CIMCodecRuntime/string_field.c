#include "imcodec_string_field.h"

const ProtobufCBinaryData imcodec_string_as_bytes_default = { 0, NULL };
