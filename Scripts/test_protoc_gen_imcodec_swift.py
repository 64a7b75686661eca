#!/usr/bin/env python3
"""Tests for the Swift generator, Scripts/protoc-gen-imcodec-swift (Scripts/imcodec_swift_generator/):
python3 Scripts/test_protoc_gen_imcodec_swift.py            run them
python3 Scripts/test_protoc_gen_imcodec_swift.py --update   rewrite the golden output, then run them

Golden output: the generator's output for Scripts/testdata/golden.proto (a small schema with every
field kind it supports) is committed under Scripts/testdata/golden/. The test regenerates it and
fails with a unified diff when anything differs, so every change to the generator shows up as a
diff of Swift; after an intended change, `--update` rewrites the files, and the diff is reviewed
with the change.

The golden output is also checked for what must stay true whatever the diff: the C modules are
imported internally, every accessor that returns a view states its lifetime (what keeps a view
inside its decode), lists exist only for types held in repeated fields, every message has a
decoder entry point, and encoders write fields back to front. Schemas the generator refuses must
fail protoc with the generator's message, sent as CodeGeneratorResponse.error. (The generated code
for Schemas/ itself is compiled and run by `swift test`, and `Scripts/generate-schemas --check`
keeps it current.)
"""

import difflib
import os
import re
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
GOLDEN_MESSAGES = ["Leaf", "Empty", "Scalars", "Every"]

HEADER = '''syntax = "proto3";
package gen.v1;
import "protobuf-c/protobuf-c.proto";
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
    """What must hold in any output, checked on the golden schema's."""

    @classmethod
    def setUpClass(cls):
        cls.files = generate_golden()
        cls.values = cls.files["Generated/golden.pb.swift"]
        cls.views = cls.files["CSeam/Generated/golden+View.swift"]

    def test_writes_values_views_and_the_registry(self):
        self.assertEqual(sorted(self.files), ["CSeam/Generated/golden+View.swift",
                                              "Generated/IMCodecSchema.swift", "Generated/golden.pb.swift"])
        for name in GOLDEN_MESSAGES:
            self.assertIn("    %s.self," % name, self.files["Generated/IMCodecSchema.swift"])

    def test_the_view_file_imports_c_internally(self):
        self.assertIn("internal import CProtobufC", self.views)
        self.assertIn("internal import CIMCodecSchemas", self.views)
        self.assertNotIn("\nimport C", self.views)
        self.assertNotIn("import C", self.values)

    def test_every_accessor_that_returns_a_view_states_its_lifetime(self):
        # The compiler requires it, and it is what keeps a view from outliving its decode.
        nonescapable = {"View", "List", "StringView", "BytesView", "StringListView", "ScalarListView",
                        "StringMapView"} | set(re.findall(r"public enum (\w+): ~Escapable", self.views))
        lines = self.views.split("\n")
        checked = 0
        for i, line in enumerate(lines):
            found = re.match(r"\s*public (?:var \w+: |subscript\(.*\) -> )([\w.<>]+)\??( \{.*)$", line)
            if not found:
                continue
            base = re.sub(r"<.*>", "", found.group(1)).split(".")[-1]
            if base in nonescapable:
                checked += 1
                self.assertEqual(found.group(2), " {", "a view returned without its lifetime: " + line)
                self.assertEqual(lines[i + 1].strip(), "@_lifetime(copy self)", line)
        self.assertGreaterEqual(checked, 20)

    def test_a_list_is_only_generated_for_types_held_in_repeated_fields(self):
        for name in ("Leaf", "Scalars"):
            self.assertIn("extension %s.View {" % name, self.views)
        for name in ("Every", "Empty"):
            self.assertNotIn("extension %s.View {" % name, self.views)

    def test_every_message_has_a_decoder_entry_point(self):
        for name in GOLDEN_MESSAGES:
            self.assertIn("_ type: %s.Type, _ bytes: Bytes, _ body: (%s.View) throws -> R" % (name, name),
                          self.views)

    def test_encoders_write_unknown_fields_then_fields_back_to_front(self):
        for name in GOLDEN_MESSAGES:
            body = self.values[self.values.index("extension %s {" % name):]
            body = body[:body.index("\n}\n")]
            self.assertIn("w.writeRaw(unknownFields.bytes)", body.split("w.writeVarint(")[0])
            # The field number of each tag written outside map entries (whose key and value are
            # written inside the entry's closure).
            outside_maps = re.sub(r"w\.writeMap\(.*?\n +\}\n", "", body, flags=re.S)
            numbers = [int(tag) >> 3 for tag in re.findall(r"w\.writeVarint\((\d+)\)", outside_maps)]
            self.assertEqual(numbers, sorted(numbers, reverse=True), name)
            self.assertEqual(len(numbers), len(set(numbers)), name)


class RefusedSchemaTests(unittest.TestCase):
    def refused(self, body, message):
        status, files, stderr = generate(HEADER + body)
        self.assertNotEqual(status, 0, "the generator accepted: " + body)
        # protoc prints CodeGeneratorResponse.error after the plugin's flag; a plugin that crashed or
        # exited instead would show "Plugin failed with status code".
        self.assertIn("--imcodec-swift_out: " + message + "\n", stderr + "\n")
        self.assertNotIn("Plugin failed", stderr)
        self.assertEqual(files, {})

    def test_a_string_without_string_as_bytes(self):
        self.refused("message M { string s = 1; }", "string field without string_as_bytes: s")

    def test_a_repeated_bool(self):
        self.refused("message M { repeated bool b = 1; }", "repeated scalar fields have no view yet: b")

    def test_a_repeated_bytes(self):
        self.refused("message M { repeated bytes b = 1; }", "repeated bytes fields have no view yet: b")

    def test_a_map_other_than_string_to_string(self):
        self.refused("message M { map<string, int32> m = 1; }", "only map<string, string> is supported: m")

    def test_a_map_without_string_keys(self):
        self.refused("message M { map<int32, string> m = 1; }",
                     "only string map keys are supported (the order of the entries): m")

    def test_an_enum_without_an_unspecified_zero(self):
        self.refused("enum E { E_FIRST = 0; } message M { E e = 1; }", "enum E must start with *_UNSPECIFIED = 0")

    def test_a_nested_message(self):
        self.refused("message M { message N { int32 x = 1; } N n = 1; }",
                     "nested messages are not supported: .gen.v1.M.N")

    def test_a_nested_enum(self):
        self.refused("message M { enum N { N_UNSPECIFIED = 0; } N n = 1; }",
                     "nested enums are not supported: .gen.v1.M.N")

    def test_a_message_holding_itself(self):
        self.refused("message M { M m = 1; }",
                     "gen.v1.M contains itself through singular fields; use a repeated field")

    def test_more_than_64_fields(self):
        fields = "\n".join("  int32 f%d = %d;" % (i, i) for i in range(1, 66))
        self.refused("message M {\n%s\n}" % fields, "gen.v1.M has more than 64 fields; split it")

    def test_more_than_16_oneofs(self):
        oneofs = "\n".join("  oneof o%d { int32 f%d = %d; }" % (i, i, i) for i in range(1, 18))
        self.refused("message M {\n%s\n}" % oneofs, "gen.v1.M has more than 16 oneofs; split it")


if __name__ == "__main__":
    if "--update" in sys.argv:
        sys.argv.remove("--update")
        update_golden()
    result = unittest.main(exit=False, verbosity=0).result
    total = result.testsRun
    failed = len(result.failures) + len(result.errors)
    print("%d tests, %d failed" % (total, failed))
    sys.exit(1 if failed else 0)
