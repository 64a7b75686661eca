#!/usr/bin/env python3
"""Makes IMCodec's golden test fixtures. Run it through Scripts/generate-fixtures.

Usage: generate_fixtures.py --fixtures DIR [--schemas DIR] [--include DIR]

Writes into DIR (normally Fixtures/; `--check` points it at a temporary copy):
  valid/NAME.txtpb   only the GENERATED ones (see generate_fixtures_templates.py)
  valid/NAME.binpb   protoc --encode=<proto-message> --deterministic_output of NAME.txtpb
  valid/NAME.json    json_format.MessageToJson (default options) of NAME.binpb read as
                     imcodec.v1.Frame, plus a trailing newline
  valid/NAME.canonical.binpb
                     Google's deterministic serialization of NAME.binpb read as imcodec.v1.Frame,
                     only where it differs from NAME.binpb (duplicated fields merged, unknown
                     fields behind the known ones)
  valid/manifest.json
  invalid/NAME.bin, invalid/manifest.json   from generate_fixtures_invalid.py
and deletes generated files (.binpb, .json, .bin) that no case produces any more.

Each valid/NAME.txtpb starts with a header of comment lines:
  # proto-file: imcodec/v1/frame.proto      (future.proto for imcodec.future types)
  # proto-message: imcodec.v1.Frame         (the type protoc --encode uses)
  # case: one line saying what the case shows   -> manifest "description"
  # tags: tag.one, tag.two                       -> manifest "tags"
  # json-roundtrip: false (why)                  -> optional; the default is true
json-roundtrip is checked, not trusted: the JSON is parsed back with json_format.Parse and
re-encoded by protoc --deterministic_output (via text format); the result must equal NAME.binpb
exactly when json-roundtrip is true, and must differ when it is false.

Reading NAME.binpb uses Python's default implementation (upb). The canonical bytes are upb's
SerializeToString(deterministic=True) with the entries of each map put in key-byte order (upb 4.21
orders a key after its extensions; C++ and pure Python order them by bytes). A case nested deeper
than upb's recursion limit (100 levels below the top level; merger_nested_100_layers) is read by
Google's pure-Python implementation instead, in a child process (Scripts/google_reference.py
--canonical), which has no such limit: it gives the JSON and the canonical bytes.
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError
    import google.protobuf
except ImportError:
    sys.exit(
        "generate-fixtures: the Python package `protobuf` is missing "
        "(pip install -r Scripts/requirements.txt)"
    )

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_fixtures_invalid  # noqa: E402
import generate_fixtures_templates  # noqa: E402
import google_reference  # noqa: E402

V1_FRAME = "imcodec.v1.Frame"
V1_PROTO = "imcodec/v1/frame.proto"
FUTURE_PROTO = "future.proto"


def fail(msg):
    sys.exit(f"generate-fixtures: {msg}")


def write(path, data: bytes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def remove_stale(folder, suffixes, keep):
    for name in sorted(os.listdir(folder)):
        if name.endswith(suffixes) and name not in keep:
            os.remove(os.path.join(folder, name))


def read_header(path):
    header = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            key, sep, value = line[1:].strip().partition(":")
            if sep and key.strip() in ("proto-file", "proto-message", "case", "tags",
                                       "json-roundtrip"):
                header[key.strip()] = value.strip()
    name = os.path.basename(path)
    for key in ("proto-file", "proto-message", "case", "tags"):
        if key not in header:
            fail(f"valid/{name}: header lacks '# {key}: ...'")
    rt = header.get("json-roundtrip", "true")
    if rt.split()[0] not in ("true", "false"):
        fail(f"valid/{name}: json-roundtrip must start with true or false")
    header["json-roundtrip"] = rt.split()[0] == "true"
    header["tags"] = [t.strip() for t in header["tags"].split(",") if t.strip()]
    return header


def proto_paths(args, proto_file):
    paths = ["-I", args.schemas]
    if proto_file == FUTURE_PROTO:
        paths += ["-I", os.path.join(args.fixtures, "schemas")]
    return paths + ["-I", args.include]


def descriptor_pool_for(args, tmp):
    """A pool built at run time from protoc --descriptor_set_out --include_imports."""
    out = os.path.join(tmp, "descriptors.pb")
    subprocess.run(
        ["protoc", "--include_imports", f"--descriptor_set_out={out}"]
        + proto_paths(args, FUTURE_PROTO)
        + [V1_PROTO, FUTURE_PROTO],
        check=True,
    )
    with open(out, "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in fds.file:
        pool.Add(file_proto)
    return pool


def message_class(pool, full_name):
    desc = pool.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def encode(args, txtpb, header):
    """Google's encoder: protoc --encode ... --deterministic_output < NAME.txtpb."""
    with open(txtpb, "rb") as stdin:
        proc = subprocess.run(
            ["protoc", f"--encode={header['proto-message']}", "--deterministic_output"]
            + proto_paths(args, header["proto-file"])
            + [header["proto-file"]],
            stdin=stdin,
            capture_output=True,
        )
    if proc.returncode != 0 or proc.stderr:
        fail(f"protoc --encode failed for {txtpb}:\n{proc.stderr.decode(errors='replace')}")
    return proc.stdout


def reencode(args, msg):
    """Google's C++ encoder again, for a message parsed back from JSON.

    Python's own deterministic serializer is not used for the comparison: upb in protobuf 4.21
    sorts map keys wrongly when one key is a prefix of another ("ab" before "a", "" last), so its
    bytes differ from protoc's for the same message.
    """
    proc = subprocess.run(
        ["protoc", f"--encode={V1_FRAME}", "--deterministic_output"]
        + proto_paths(args, V1_PROTO) + [V1_PROTO],
        input=text_format.MessageToString(msg).encode("utf-8"),
        capture_output=True,
    )
    if proc.returncode != 0 or proc.stderr:
        fail(f"protoc --encode failed re-encoding parsed JSON:\n{proc.stderr.decode(errors='replace')}")
    return proc.stdout


def generate_valid(args, pool):
    valid = os.path.join(args.fixtures, "valid")
    for name, make in sorted(generate_fixtures_templates.GENERATED.items()):
        write(os.path.join(valid, name + ".txtpb"), make().encode("utf-8"))

    frame_cls = message_class(pool, V1_FRAME)
    pool_frame = pool.FindMessageTypeByName(V1_FRAME)
    names = sorted(n[: -len(".txtpb")] for n in os.listdir(valid) if n.endswith(".txtpb"))
    manifest = []
    keep = set()
    for name in names:
        txtpb = os.path.join(valid, name + ".txtpb")
        header = read_header(txtpb)
        if header["proto-message"] != V1_FRAME and header["proto-file"] != FUTURE_PROTO:
            fail(f"valid/{name}.txtpb: types other than {V1_FRAME} come from {FUTURE_PROTO}")
        binpb = encode(args, txtpb, header)

        try:
            msg = frame_cls.FromString(binpb)
            text = json_format.MessageToJson(msg) + "\n"
            tree = google_reference.parse_tree(msg.SerializeToString(deterministic=True), pool_frame)
            google_reference.sort_map_entries(tree)
            canonical = google_reference.serialize(tree)
        except DecodeError:
            # Deeper than upb's recursion limit: Google's pure-Python parser reads it.
            with tempfile.TemporaryDirectory() as tmp:
                [result] = google_reference.run_canonical([binpb], args, tmp)
            if "error" in result:
                fail(f"valid/{name}: pure-Python protobuf cannot read the case either: {result['error']}")
            text = result["json"] + "\n"
            canonical = base64.b64decode(result["canonical"])
        back = frame_cls()
        json_format.Parse(text, back, max_recursion_depth=1000)  # the 100-layer merger nests 304 levels
        roundtrips = reencode(args, back) == binpb
        if roundtrips != header["json-roundtrip"]:
            fail(
                f"valid/{name}.txtpb says json-roundtrip: {str(header['json-roundtrip']).lower()}"
                f" but its JSON, parsed back and re-encoded, gives "
                f"{'the same' if roundtrips else 'different'} bytes"
            )
        if header["proto-message"] == V1_FRAME and not roundtrips:
            # Only unknown-field / wire-shape cases may lose information in JSON.
            fail(f"valid/{name}: an imcodec.v1.Frame case whose JSON does not round-trip")
        if roundtrips and canonical != binpb:
            fail(f"valid/{name}: Google's deterministic serialization differs from protoc's bytes")
        if canonical != binpb:
            write(os.path.join(valid, name + ".canonical.binpb"), canonical)
            keep.add(name + ".canonical.binpb")

        write(os.path.join(valid, name + ".binpb"), binpb)
        write(os.path.join(valid, name + ".json"), text.encode("utf-8"))
        keep.update({name + ".binpb", name + ".json"})
        manifest.append(
            {
                "name": name,
                "description": header["case"],
                "json_roundtrip": header["json-roundtrip"],
                "canonical": name + ".canonical.binpb" if canonical != binpb else None,
                "tags": header["tags"],
            }
        )
    remove_stale(valid, (".binpb", ".json"), keep | {"manifest.json"})
    write(os.path.join(valid, "manifest.json"), dump_json(manifest))
    return len(manifest)


def generate_invalid(args):
    invalid = os.path.join(args.fixtures, "invalid")
    os.makedirs(invalid, exist_ok=True)
    manifest = []
    keep = set()
    for c in generate_fixtures_invalid.CASES:
        if c["file"] in keep:
            fail(f"invalid/{c['file']} defined twice")
        keep.add(c["file"])
        write(os.path.join(invalid, c["file"]), c["data"])
        manifest.append({k: c[k] for k in ("file", "type", "code", "offset", "options",
                                           "description")})
    manifest.sort(key=lambda e: e["file"])
    remove_stale(invalid, (".bin",), keep)
    write(os.path.join(invalid, "manifest.json"), dump_json(manifest))
    return len(manifest)


def dump_json(value) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def main():
    sys.setrecursionlimit(20_000)  # text_format and json_format recurse per level (304 levels deep)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixtures", default=os.path.join(root, "Fixtures"))
    ap.add_argument("--schemas", default=os.path.join(root, "Schemas"))
    ap.add_argument("--include", default="/usr/include")
    args = ap.parse_args()
    args.fixtures = os.path.abspath(args.fixtures)
    args.schemas = os.path.abspath(args.schemas)

    with tempfile.TemporaryDirectory() as tmp:
        pool = descriptor_pool_for(args, tmp)
        n_valid = generate_valid(args, pool)
    n_invalid = generate_invalid(args)
    print(f"generate-fixtures: {n_valid} valid and {n_invalid} invalid cases "
          f"(protobuf {google.protobuf.__version__})")


if __name__ == "__main__":
    main()
