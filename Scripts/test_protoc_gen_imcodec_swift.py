#!/usr/bin/env python3
"""Tests for the Swift generator, Scripts/protoc-gen-imcodec-swift:
python3 Scripts/test_protoc_gen_imcodec_swift.py            run them
python3 Scripts/test_protoc_gen_imcodec_swift.py --update   rewrite the golden output, then run them

Golden output: the generator's output for Scripts/testdata/golden.proto (a small schema with every
field kind it supports) is committed under Scripts/testdata/golden/. The test regenerates it and
fails with a unified diff when anything differs, so every change to the generator shows up as a
diff of Swift; after an intended change, `--update` rewrites the files, and the diff is reviewed
with the change.

Each test writes a small .proto into a temporary directory and runs protoc with the plugin on it.
What the generated Swift must hold is checked as text: the value type, the view of every field kind
(numbers, enums, strings, bytes, repeated strings, numbers and messages, maps, sub-messages, oneofs)
with the lifetime annotations that keep views inside their decode, the values built through the
views, the `WireDecoder.withView` entry point, and the encoder's field order. Schemas the generator
cannot serve must stop it with a message that names the problem. (The generated code for Schemas/
itself is compiled and run by `swift test`, and `Scripts/generate-schemas --check` keeps it
current.)
"""

import difflib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(ROOT, "Scripts", "protoc-gen-imcodec-swift")
TESTDATA = os.path.join(ROOT, "Scripts", "testdata")
GOLDEN_PROTO = "golden.proto"
GOLDEN_DIR = os.path.join(TESTDATA, "golden")

HEADER = '''syntax = "proto3";
package gen.v1;
import "protobuf-c/protobuf-c.proto";
'''

EVERY_KIND = HEADER + '''
enum Color {
  COLOR_UNSPECIFIED = 0;
  COLOR_RED = 1;
}
message Leaf {
  string name = 1 [(pb_c_field).string_as_bytes = true];
}
message Every {
  int64 big = 1;
  bool flag = 2;
  double ratio = 3;
  Color color = 4;
  string title = 5 [(pb_c_field).string_as_bytes = true];
  bytes blob = 6;
  repeated string tags = 7 [(pb_c_field).string_as_bytes = true];
  repeated uint32 counts = 8;
  repeated Leaf leaves = 9;
  map<string, string> attributes = 10;
  Leaf leaf = 11;
  oneof choice {
    Leaf picked = 12;
    string label = 13 [(pb_c_field).string_as_bytes = true];
    sint32 number = 14;
  }
}
'''


def read_tree(folder):
    """{path relative to folder: text} for every file under folder."""
    files = {}
    for parent, _, names in os.walk(folder):
        for n in names:
            full = os.path.join(parent, n)
            with open(full) as f:
                files[os.path.relpath(full, folder)] = f.read()
    return files


def run_protoc(include, name, out):
    """Runs protoc with the plugin on include/name, writing into out; returns protoc's run."""
    return subprocess.run(
        ["protoc", "-I" + include, "-I/usr/include", "--plugin=protoc-gen-imcodec-swift=" + PLUGIN,
         "--imcodec-swift_out=" + out, name],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def generate(proto_text, name="gen/v1/test.proto"):
    """Runs protoc with the plugin; returns (exit status, {output file: text}, stderr)."""
    with tempfile.TemporaryDirectory(prefix="protoc-gen-test.") as tmp:
        path = os.path.join(tmp, name)
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write(proto_text)
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        run = run_protoc(tmp, name, out)
        return run.returncode, read_tree(out), run.stderr


def generate_golden():
    """The generator's output for Scripts/testdata/golden.proto, as {output file: text}."""
    with tempfile.TemporaryDirectory(prefix="protoc-gen-golden.") as out:
        run = run_protoc(TESTDATA, GOLDEN_PROTO, out)
        if run.returncode != 0:
            raise AssertionError("protoc failed on %s:\n%s" % (GOLDEN_PROTO, run.stderr))
        return read_tree(out)


def update_golden():
    """Rewrites Scripts/testdata/golden/ with what the generator makes now."""
    files = generate_golden()
    shutil.rmtree(GOLDEN_DIR, ignore_errors=True)
    for rel, text in files.items():
        path = os.path.join(GOLDEN_DIR, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    print("rewrote %s (%d files)" % (os.path.relpath(GOLDEN_DIR, ROOT), len(files)))


def golden_diff():
    """A unified diff from the committed golden output to what the generator makes now ("" if equal)."""
    want, got = read_tree(GOLDEN_DIR), generate_golden()
    base = os.path.relpath(GOLDEN_DIR, ROOT)
    diff = []
    for rel in sorted(set(want) | set(got)):
        diff += difflib.unified_diff(
            want.get(rel, "").splitlines(True), got.get(rel, "").splitlines(True),
            fromfile="%s/%s%s" % (base, rel, "" if rel in want else " (missing)"),
            tofile="generated/%s%s" % (rel, "" if rel in got else " (not generated)"))
    return "".join(diff)


class GoldenOutputTests(unittest.TestCase):
    def test_the_golden_schema_generates_the_committed_swift(self):
        diff = golden_diff()
        if diff:
            self.fail("the generator's output for Scripts/testdata/%s changed; review the diff, then "
                      "run `python3 Scripts/test_protoc_gen_imcodec_swift.py --update`:\n%s"
                      % (GOLDEN_PROTO, diff))


class GeneratedCodeTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        status, cls.files, stderr = generate(EVERY_KIND)
        assert status == 0, stderr
        cls.values = cls.files["Generated/test.pb.swift"]
        cls.views = cls.files["CSeam/Generated/test+View.swift"]

    def test_writes_values_views_and_the_registry(self):
        self.assertEqual(sorted(self.files),
                         ["CSeam/Generated/test+View.swift", "Generated/IMCodecSchema.swift", "Generated/test.pb.swift"])
        self.assertIn("public struct Every: IMCodecMessage {", self.values)
        self.assertIn("Every.self,", self.files["Generated/IMCodecSchema.swift"])

    def test_the_view_file_imports_c_internally(self):
        self.assertIn("internal import CProtobufC", self.views)
        self.assertIn("internal import CIMCodecSchemas", self.views)
        self.assertNotIn("\nimport C", self.views)

    def test_every_field_kind_has_its_view(self):
        for line in [
            "public var big: Int64 { _c.pointee.big }",
            "public var flag: Bool { _c.pointee.flag != 0 }",
            "public var ratio: Double { _c.pointee.ratio }",
            "public var color: Color { Color(rawValue: Int32(bitPattern: _c.pointee.color.rawValue)) }",
            "public var title: StringView {",
            "public var blob: BytesView {",
            "public var tags: StringListView {",
            "public var counts: ScalarListView<UInt32> {",
            "public var leaves: Leaf.View.List {",
            "public var attributes: StringMapView {",
            "public var leaf: Leaf.View? {",
            "public var choice: Choice? {",
            "public var choiceKind: Every.Choice.Kind? {",
            "public var hasUnknownFields: Bool",
            "public var unknownFields: UnknownFields",
            "public func materialize() -> Every {",
        ]:
            self.assertIn(line, self.views)

    def test_views_are_nonescapable_and_say_what_they_depend_on(self):
        self.assertIn("public struct View: ~Escapable {", self.views)
        self.assertIn("public enum Choice: ~Escapable {", self.views)
        self.assertIn("public struct List: ~Escapable {", self.views)
        # Every accessor that returns a view states its lifetime (the compiler requires it, and it
        # is what keeps a view from outliving its decode).
        getters = self.views.count("@_lifetime(copy self)")
        self.assertGreaterEqual(getters, 10)
        self.assertIn("case picked(Leaf.View)", self.views)
        self.assertIn("case label(StringView)", self.views)
        self.assertIn("case number(Int32)", self.views)

    def test_a_list_is_only_generated_for_types_held_in_repeated_fields(self):
        self.assertIn("extension Leaf.View {", self.views)
        self.assertNotIn("extension Every.View {", self.views)

    def test_values_are_built_through_the_views(self):
        self.assertIn("init(_viewOf raw: UnsafeRawPointer, depth: Int) {", self.views)
        self.assertIn("title = v.title.materialize()", self.views)
        self.assertIn("counts = v.counts.materialize()", self.views)
        self.assertIn("if let field = v.leaf { leaf = Leaf(_viewOf: field._raw, depth: depth) }", self.views)
        self.assertIn("case .picked(let member)?: choice = .picked(Leaf(_viewOf: member._raw, depth: depth))", self.views)
        self.assertIn("unknownFields = v.unknownFields", self.views)

    def test_every_type_has_a_decoder_entry_point(self):
        for name in ("Leaf", "Every"):
            self.assertIn("_ type: %s.Type, _ bytes: Bytes, _ body: (%s.View) throws -> R" % (name, name), self.views)

    def test_the_encoder_writes_fields_back_to_front(self):
        encoder = self.values[self.values.index("extension Every {"):]
        positions = [encoder.index("w.writeVarint(%d)" % tag) for tag in (
            (10 << 3) | 2,  # attributes, before ...
            (5 << 3) | 2,   # title, before ...
            (1 << 3) | 0,   # big
        )]
        self.assertEqual(positions, sorted(positions))
        self.assertIn("w.writeRaw(unknownFields.bytes)", encoder)


class RefusedSchemaTests(unittest.TestCase):
    def refused(self, body, message):
        status, _, stderr = generate(HEADER + body)
        self.assertNotEqual(status, 0, "the generator accepted: " + body)
        self.assertIn(message, stderr)

    def test_a_string_without_string_as_bytes(self):
        self.refused("message M { string s = 1; }", "string field without string_as_bytes: s")

    def test_a_repeated_bool(self):
        self.refused("message M { repeated bool b = 1; }", "repeated scalar fields have no view yet: b")

    def test_a_map_other_than_string_to_string(self):
        self.refused("message M { map<string, int32> m = 1; }", "only map<string, string> is supported: m")

    def test_an_enum_without_an_unspecified_zero(self):
        self.refused("enum E { E_FIRST = 0; } message M { E e = 1; }", "must start with *_UNSPECIFIED = 0")

    def test_a_nested_message(self):
        self.refused("message M { message N { int32 x = 1; } N n = 1; }", "nested messages are not supported")

    def test_a_message_holding_itself(self):
        self.refused("message M { M m = 1; }", "contains itself through singular fields")

    def test_more_than_64_fields(self):
        fields = "\n".join("  int32 f%d = %d;" % (i, i) for i in range(1, 66))
        self.refused("message M {\n%s\n}" % fields, "has more than 64 fields")


if __name__ == "__main__":
    if "--update" in sys.argv:
        sys.argv.remove("--update")
        update_golden()
    result = unittest.main(exit=False, verbosity=0).result
    total = result.testsRun
    failed = len(result.failures) + len(result.errors)
    print("%d tests, %d failed" % (total, failed))
    sys.exit(1 if failed else 0)
