#!/usr/bin/env python3
"""Tests for Scripts/export-schemas: python3 Scripts/test_export_schemas.py

- The text edit, case by case: protobuf-c's import and its options go (the option list too when
  nothing else is left in it; `import public`, file and message options, aggregate values, lists
  over several lines), everything else stays byte for byte (other options, comments and strings
  that name protobuf-c or hold brackets).
- The real export of Schemas/: the files it writes, no protobuf-c left outside comments, protoc
  compiles it with the export as its only import path, and the descriptor check passes.
- The descriptor check itself: an export edited to move one field number, to rename an enum value
  or to drop another option fails with exit 1 and names what differs; an export of a schema that
  still names protobuf-c where the script cannot remove it fails too.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_schemas  # noqa: E402
from export_schemas import ExportError, strip_protobuf_c  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "Scripts", "export-schemas")


def run(*args):
    return subprocess.run([SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


class StripTests(unittest.TestCase):
    def test_the_import_line_goes_with_one_blank_line(self):
        text = 'syntax = "proto3";\n\npackage p;\n\nimport "protobuf-c/protobuf-c.proto";\n\nmessage M {}\n'
        self.assertEqual(strip_protobuf_c(text), 'syntax = "proto3";\n\npackage p;\n\nmessage M {}\n')

    def test_other_imports_stay(self):
        text = ('import "imcodec/v1/common.proto";\nimport public "protobuf-c/protobuf-c.proto";\n'
                'import "a.proto";\n')
        self.assertEqual(strip_protobuf_c(text), 'import "imcodec/v1/common.proto";\nimport "a.proto";\n')

    def test_a_list_of_only_protobuf_c_options_goes(self):
        self.assertEqual(strip_protobuf_c("  string a = 1 [(pb_c_field).string_as_bytes = true];\n"),
                         "  string a = 1;\n")
        self.assertEqual(strip_protobuf_c("  repeated string a = 3 [ ( .pb_c_field ).string_as_bytes=true ] ;"),
                         "  repeated string a = 3 ;")

    def test_other_options_in_the_list_stay(self):
        self.assertEqual(
            strip_protobuf_c('string a = 1 [json_name = "A", (pb_c_field).string_as_bytes = true, deprecated = true];'),
            'string a = 1 [json_name = "A", deprecated = true];')
        self.assertEqual(strip_protobuf_c("int32 b = 2 [(pb_c_field) = { string_as_bytes: true }, packed = false];"),
                         "int32 b = 2 [packed = false];")
        self.assertEqual(strip_protobuf_c("int32 c = 3 [deprecated = true];"), "int32 c = 3 [deprecated = true];")

    def test_a_list_over_several_lines(self):
        text = "  string a = 1 [\n    (pb_c_field).string_as_bytes = true,\n    json_name = \"x\"\n  ];\n"
        self.assertEqual(strip_protobuf_c(text), '  string a = 1 [json_name = "x"];\n')

    def test_file_and_message_options_go(self):
        text = ('option (pb_c_file).c_package = "imc";\noption java_package = "x.y";\n'
                'message M {\n  option (pb_c_msg) = { base_field_name: "b" };\n  int32 a = 1;\n}\n')
        self.assertEqual(strip_protobuf_c(text),
                         'option java_package = "x.y";\nmessage M {\n  int32 a = 1;\n}\n')

    def test_comments_and_strings_stay(self):
        text = ('// Every string carries [(pb_c_field).string_as_bytes = true]; protobuf-c/protobuf-c.proto.\n'
                '/* option (pb_c_file).x = 1; [a, b] */\n'
                'message M {\n  // keep [start, end]\n'
                '  string a = 1 [json_name = "pb_c_field]"]; // [(pb_c_field)]\n}\n')
        self.assertEqual(strip_protobuf_c(text), text)

    def test_an_option_it_cannot_remove_is_an_error(self):
        with self.assertRaises(ExportError):
            strip_protobuf_c("message M { string a = 1 [(pb_c_field).string_as_bytes = true; }")
        with self.assertRaises(ExportError):
            strip_protobuf_c("extend google.protobuf.FieldOptions { int32 pb_c_mine = 5000; }")


class ExportTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="export-schemas-test.")
        self.out = os.path.join(self.tmp, "export")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def export(self):
        made = run(self.out)
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        return made

    def test_the_export_of_schemas(self):
        made = self.export()
        self.assertIn("descriptors equal", made.stdout)
        protos = sorted(os.listdir(os.path.join(ROOT, "Schemas", "imcodec", "v1")))
        self.assertEqual(sorted(os.listdir(os.path.join(self.out, "imcodec", "v1"))), protos)
        self.assertEqual(sorted(os.listdir(self.out)), ["README.md", "buf.yaml", "imcodec"])
        for name in protos:
            with open(os.path.join(self.out, "imcodec", "v1", name)) as f:
                text = f.read()
            code = "".join(t[1] for t in export_schemas._tokens(text) if t[0] != "comment")
            self.assertNotIn("pb_c", code, name)
            self.assertNotIn("protobuf-c", code, name)
            self.assertTrue(text.startswith(export_schemas.HEADER), name)
        with open(os.path.join(self.out, "buf.yaml")) as f:
            buf = f.read()
        self.assertIn("version: v2\n", buf)
        self.assertIn("name: buf.build/imcodec/v1\n", buf)
        try:
            import yaml
        except ImportError:
            yaml = None
        if yaml is not None:
            config = yaml.safe_load(buf)
            self.assertEqual(config["modules"], [{"path": ".", "name": "buf.build/imcodec/v1"}])
        # protoc with the export as its only import path (no protobuf-c anywhere).
        compiled = subprocess.run(["protoc", "-I", self.out, "--descriptor_set_out=" + os.path.join(self.tmp, "d.pb")]
                                  + ["imcodec/v1/" + p for p in protos], cwd=self.out,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(compiled.returncode, 0, compiled.stderr)

    def test_a_second_export_replaces_the_first(self):
        self.export()
        stale = os.path.join(self.out, "imcodec", "v1", "gone.proto")
        with open(stale, "w") as f:
            f.write('syntax = "proto3";\n')
        keep = os.path.join(self.out, "NOTES")
        with open(keep, "w") as f:
            f.write("mine\n")
        self.export()
        self.assertFalse(os.path.exists(stale))
        self.assertTrue(os.path.exists(keep))

    def edited_export(self, rel, old, new):
        """The export of Schemas/, then one edit of it; returns the check's differences."""
        self.export()
        path = os.path.join(self.out, rel)
        with open(path) as f:
            text = f.read()
        self.assertEqual(text.count(old), 1, old)
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        return export_schemas.compare(os.path.join(ROOT, "Schemas"), self.out, "/usr/include")

    def test_the_check_sees_a_moved_field_number(self):
        diffs = self.edited_export("imcodec/v1/common.proto", "string channel_id = 3;", "string channel_id = 9;")
        self.assertEqual(diffs[0], "imcodec/v1/common.proto differs (- Schemas/, + export):")
        self.assertIn("-    number: 3", diffs)
        self.assertIn("+    number: 9", diffs)

    def test_the_check_sees_a_renamed_enum_value_and_another_option(self):
        diffs = self.edited_export("imcodec/v1/common.proto", "CONVERSATION_TYPE_SYSTEM = 5;",
                                   "CONVERSATION_TYPE_SYSTEMS = 5;")
        self.assertIn('+    name: "CONVERSATION_TYPE_SYSTEMS"', diffs)
        diffs = self.edited_export("imcodec/v1/common.proto", "string channel_id = 3;",
                                   'string channel_id = 3 [json_name = "channel"];')
        self.assertIn('+    json_name: "channel"', diffs)

    def test_a_mixed_option_list_exports_and_an_unremovable_option_fails(self):
        schemas = os.path.join(self.tmp, "Schemas")
        shutil.copytree(os.path.join(ROOT, "Schemas", "imcodec"), os.path.join(schemas, "imcodec"))
        # A protobuf-c option the text edit removes, next to an option it must keep: identical.
        common = os.path.join(schemas, "imcodec", "v1", "common.proto")
        with open(common) as f:
            text = f.read()
        edited = text.replace("string channel_id = 3 [(pb_c_field).string_as_bytes = true];",
                              'string channel_id = 3 [json_name = "channel", (pb_c_field).string_as_bytes = true];')
        self.assertNotEqual(edited, text)
        with open(common, "w") as f:
            f.write(edited)
        made = run(self.out, "--schemas", schemas)
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        with open(os.path.join(self.out, "imcodec", "v1", "common.proto")) as f:
            self.assertIn('string channel_id = 3 [json_name = "channel"];', f.read())
        # A protobuf-c option it cannot remove: exit 1, nothing claimed.
        with open(common, "w") as f:
            f.write(edited.replace("package imcodec.v1;", "package imcodec.v1;\nextend google.protobuf.FieldOptions"
                                   " { int32 pb_c_mine = 50000; }"))
        made = run(self.out, "--schemas", schemas)
        self.assertEqual(made.returncode, 1, made.stdout + made.stderr)
        self.assertIn("protobuf-c is still named", made.stderr)

    def test_drop_fields(self):
        # field 1 varint, field 1019 length-delimited (tag 0xDA 0x3F), field 2 fixed32, a group 5.
        data = bytes([0x08, 0x01, 0xDA, 0x3F, 0x02, 0x08, 0x01, 0x15, 1, 2, 3, 4, 0x2B, 0x08, 0x07, 0x2C])
        self.assertEqual(export_schemas.drop_fields(data, {1019}),
                         bytes([0x08, 0x01, 0x15, 1, 2, 3, 4, 0x2B, 0x08, 0x07, 0x2C]))
        self.assertEqual(export_schemas.drop_fields(data, {1, 2, 5, 1019}), b"")
        with self.assertRaises(ExportError):
            export_schemas.drop_fields(bytes([0xDA, 0x3F, 0x05, 0x00]), {1019})


if __name__ == "__main__":
    unittest.main()
