#!/usr/bin/env python3
"""Lays protoc-c output out as the CIMCodecSchemas target, with one documented change.

Usage: postprocess-protoc-c.py IN_DIR OUT_DIR PROTOC_C_VERSION PROTOC_VERSION PROTO...

Layout: headers go to OUT_DIR/include/imcodec/v1/, sources to OUT_DIR/imcodec/v1/, plus a header
OUT_DIR/include/CIMCodecSchemas.h that includes every header and records the generator versions,
and the module map that exports it to Swift.

Two changes, both about strings:

1. protoc-c 1.4.1 gives every `string_as_bytes` field (a PROTOBUF_C_TYPE_BYTES field) the default
   `&protobuf_c_empty_string`, a one-byte char array, which the runtime then reads as a 16-byte
   ProtobufCBinaryData (an out-of-bounds read when a field repeats and in free_unpacked). We point
   those defaults at `imcodec_string_as_bytes_default` instead (a real empty ProtobufCBinaryData,
   see Sources/CIMCodecRuntime/include/imcodec_string_field.h), which also marks the field as a
   UTF-8 string for the pre-scan, the JSON code and the Swift conversions.

2. Map keys and values. Every `string` field in Schemas/ carries `string_as_bytes`, but a map's
   entry message is synthesized by protoc and its key and value cannot take field options, so
   protoc-c makes them NUL-terminated `char *` (PROTOBUF_C_TYPE_STRING). protobuf-c would then cut
   a key or value at its first U+0000, which proto3 allows and Google's parsers keep. So we give
   map entries what `string_as_bytes` would have given them: in the header, `char *key;` becomes
   `ProtobufCBinaryData key;` (and its initializer `{0,NULL}`); in the descriptor,
   PROTOBUF_C_TYPE_STRING becomes PROTOBUF_C_TYPE_BYTES with the default of change 1. protobuf-c's
   runtime reads and writes such a field by its descriptor alone, exactly as it does a
   `string_as_bytes` field, so the wire format is unchanged. The script refuses to finish if any
   `char *` string or PROTOBUF_C_TYPE_STRING field is left, or if one it would change is not in a
   map entry (a struct whose name ends in `Entry` with exactly the fields `key` and `value`).

Nothing else is touched.
"""
import os
import re
import sys

BYTES_DEFAULT = re.compile(
    r"(PROTOBUF_C_TYPE_BYTES,\n(?:[^\n]*\n){3}\s*)&protobuf_c_empty_string,"
)
# A map entry's string key or value descriptor (change 2).
MAP_STRING = re.compile(
    r"(\{\n\s*\"(?:key|value)\",\n[^\n]*\n[^\n]*\n\s*)PROTOBUF_C_TYPE_STRING(,\n[^\n]*\n[^\n]*"
    r"Entry, (?:key|value)\),\n[^\n]*\n\s*)&protobuf_c_empty_string,"
)
# A map entry struct in the header, with its initializer (change 2).
MAP_STRUCT = re.compile(
    r"(struct  \w+Entry\n\{\n  ProtobufCMessage base;\n)  char \*key;\n  char \*value;\n(\};\n#define \w+ENTRY__INIT \\\n"
    r"[^\n]*\n\s*, )\(char \*\)protobuf_c_empty_string, \(char \*\)protobuf_c_empty_string \}"
)


def map_strings_as_bytes(proto, header, source):
    """Change 2: map entries' string keys and values become ProtobufCBinaryData."""
    header, structs = MAP_STRUCT.subn(
        r"\1  ProtobufCBinaryData key;\n  ProtobufCBinaryData value;\n\2{0,NULL}, {0,NULL} }", header
    )
    source, fields = MAP_STRING.subn(r"\1PROTOBUF_C_TYPE_BYTES\2&protobuf_c_empty_string,", source)
    if fields != 2 * structs:
        raise SystemExit(
            "postprocess: %s: %d map entry structs but %d map string fields" % (proto, structs, fields)
        )
    if re.search(r"^  char \*", header, re.M) or "PROTOBUF_C_TYPE_STRING" in source:
        raise SystemExit(
            "postprocess: %s has a string that is neither string_as_bytes nor a map key or value"
            % proto
        )
    return header, source


def main() -> int:
    in_dir, out_dir, protoc_c_version, protoc_version, *protos = sys.argv[1:]
    headers = []
    for proto in protos:
        stem = proto[: -len(".proto")]
        with open(os.path.join(in_dir, stem + ".pb-c.h"), encoding="utf-8") as f:
            header = f.read()
        with open(os.path.join(in_dir, stem + ".pb-c.c"), encoding="utf-8") as f:
            source = f.read()
        header, source = map_strings_as_bytes(proto, header, source)
        source, count = BYTES_DEFAULT.subn(r"\1&imcodec_string_as_bytes_default,", source)
        if count:
            include = '#include "%s.pb-c.h"\n' % stem
            if include not in source:
                raise SystemExit("postprocess: unexpected protoc-c output for " + proto)
            source = source.replace(
                include,
                include
                + "#include \"imcodec_string_field.h\"  /* Scripts/postprocess-protoc-c.py */\n",
                1,
            )
        if "&protobuf_c_empty_string," in re.sub(
            r"PROTOBUF_C_TYPE_STRING,\n(?:[^\n]*\n){3}\s*&protobuf_c_empty_string,", "", source
        ):
            raise SystemExit("postprocess: a bytes default was left unpatched in " + proto)
        write(os.path.join(out_dir, "include", stem + ".pb-c.h"), header)
        write(os.path.join(out_dir, stem + ".pb-c.c"), source)
        headers.append(stem + ".pb-c.h")

    umbrella = [
        "// Generated by Scripts/generate-schemas. DO NOT EDIT.",
        "// " + protoc_c_version + "; " + protoc_version,
        "#ifndef CIMCODECSCHEMAS_H",
        "#define CIMCODECSCHEMAS_H",
        "",
    ]
    umbrella += ['#include "%s"' % h for h in headers]
    umbrella += ["", "#endif", ""]
    write(os.path.join(out_dir, "include", "CIMCodecSchemas.h"), "\n".join(umbrella))
    write(
        os.path.join(out_dir, "include", "module.modulemap"),
        'module CIMCodecSchemas {\n    header "CIMCodecSchemas.h"\n    export *\n}\n',
    )
    return 0


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
