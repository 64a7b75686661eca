#!/usr/bin/env python3
"""Tests for Scripts/schema-compat: python3 Scripts/test_schema_compat.py

Each test copies Schemas/imcodec to a temporary directory, takes a baseline of the copy
(schema-compat --update-baseline into the temporary directory, so the tests do not depend on how far
Schemas/ has moved past the committed baseline), makes one small textual edit and runs
Scripts/schema-compat against that baseline. Breaks must exit 1 and print exactly the expected lines
on stdout; compatible additions must exit 0. One test checks the real tree against the committed
baseline (Schemas/baseline/imcodec-v1.binpb).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "Scripts", "schema-compat")
BASELINE = os.path.join(ROOT, "Schemas", "baseline", "imcodec-v1.binpb")

MESSAGE = "imcodec/v1/message.proto"
EVENTS = "imcodec/v1/events.proto"
FRAME = "imcodec/v1/frame.proto"


class SchemaCompatTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="schema-compat-test.")
        self.schemas = os.path.join(self.tmp, "Schemas")
        shutil.copytree(os.path.join(ROOT, "Schemas", "imcodec"), os.path.join(self.schemas, "imcodec"))
        self.baseline = os.path.join(self.tmp, "baseline.binpb")
        made = subprocess.run([SCRIPT, "--update-baseline", "--baseline", self.baseline, "--schemas", self.schemas],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, rel, old, new):
        path = os.path.join(self.schemas, rel)
        with open(path) as f:
            text = f.read()
        self.assertEqual(text.count(old), 1, "%r must occur once in %s" % (old, rel))
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def run_script(self, *args, schemas=None, baseline=None):
        cmd = [SCRIPT, "--baseline", baseline or self.baseline, "--schemas", schemas or self.schemas] + list(args)
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)

    def assert_breaks(self, *expected):
        proc = self.run_script()
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout.splitlines(), list(expected))
        self.assertIn("incompatible change", proc.stderr)

    def assert_compatible(self, summary_part=None):
        proc = self.run_script()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 1, proc.stdout)
        self.assertTrue(lines[0].startswith("schema-compat: "), lines[0])
        self.assertIn("is compatible with the baseline", lines[0])
        if summary_part:
            self.assertIn(summary_part, lines[0])

    # -- the real tree --------------------------------------------------------------------------

    def test_schemas_are_compatible_with_the_committed_baseline(self):
        proc = self.run_script(schemas=os.path.join(ROOT, "Schemas"), baseline=BASELINE)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("is compatible with the baseline", proc.stdout)

    def test_unmodified_copy_is_compatible(self):
        self.assert_compatible("0 fields, 0 values and 0 types added")

    # -- fields ---------------------------------------------------------------------------------

    def test_field_renumbered(self):
        self.edit(MESSAGE, "  uint64 seq = 3;\n  // Random number", "  uint64 seq = 900;\n  // Random number")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.seq: field number changed 3 -> 900 (wire break)")

    def test_field_removed_without_reserved(self):
        self.edit(MESSAGE, "  string sender_nickname = 22 [(pb_c_field).string_as_bytes = true];\n", "")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.sender_nickname: field 22 removed without "
            "reserving its number or name (wire and JSON break)")

    def test_field_removed_number_reserved_name_not(self):
        self.edit(MESSAGE, "  string sender_nickname = 22 [(pb_c_field).string_as_bytes = true];\n",
                  "  reserved 22;\n")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.sender_nickname: field 22 removed without "
            "reserving its name \"sender_nickname\" (JSON break)")

    def test_field_removed_with_reserved_number_and_name(self):
        self.edit(MESSAGE, "  string sender_nickname = 22 [(pb_c_field).string_as_bytes = true];\n",
                  "  reserved 22;\n  reserved \"sender_nickname\";\n")
        self.assert_compatible("0 fields")

    def test_field_number_reused_by_another_field(self):
        self.edit(MESSAGE, "  string sender_nickname = 22 [(pb_c_field).string_as_bytes = true];\n",
                  "  bytes avatar = 22;\n")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.sender_nickname: field 22 renamed to avatar "
            "(JSON name \"senderNickname\" -> \"avatar\"; JSON break)",
            "imcodec/v1/message.proto: imcodec.v1.Message.sender_nickname: type changed string -> bytes "
            "(JSON break: string and bytes are encoded differently)")

    def test_field_renamed(self):
        self.edit(MESSAGE, "  uint32 random = 4;", "  uint32 nonce = 4;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.random: field 4 renamed to nonce "
            "(JSON name \"random\" -> \"nonce\"; JSON break)")

    def test_string_to_bytes(self):
        self.edit(MESSAGE, "  string text = 1 [(pb_c_field).string_as_bytes = true];", "  bytes text = 1;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.TextElement.text: type changed string -> bytes "
            "(JSON break: string and bytes are encoded differently)")

    def test_int32_to_string(self):
        self.edit(MESSAGE, "  int32 index = 1;", "  string index = 1;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.FaceElement.index: type changed int32 -> string (wire break)")

    def test_enum_to_int32(self):
        self.edit(MESSAGE, "  Priority priority = 9;", "  int32 priority = 9;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.priority: type changed enum imcodec.v1.Priority "
            "-> int32 (JSON break: enums are names, integers are numbers)")

    def test_uint64_narrowed_to_uint32(self):
        self.edit(MESSAGE, "  uint64 seq = 3;\n  // Random number", "  uint32 seq = 3;\n  // Random number")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.seq: type changed uint64 -> uint32 "
            "(narrowed to 32 bits: values are truncated)")

    def test_int32_widened_to_int64_is_compatible(self):
        self.edit(MESSAGE, "  int32 index = 1;", "  int64 index = 1;")
        self.assert_compatible()

    def test_singular_to_repeated(self):
        self.edit(MESSAGE, "  uint32 flags = 11;", "  repeated uint32 flags = 11;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.flags: label changed uint32 -> repeated uint32 "
            "(wire and JSON break)")

    def test_proto3_optional_added_is_compatible(self):
        self.edit(FRAME, "  uint32 schema_version = 1;", "  optional uint32 schema_version = 1;")
        self.assert_compatible()

    def test_field_moved_into_oneof(self):
        self.edit(FRAME, "  uint32 min_reader_version = 2;\n", "")
        self.edit(FRAME, "  oneof payload {\n", "  oneof payload {\n    uint32 min_reader_version = 2;\n")
        self.assert_breaks(
            "imcodec/v1/frame.proto: imcodec.v1.Frame.min_reader_version: moved into oneof payload "
            "(unsafe: setting another member clears it)")

    def test_map_value_type_changed(self):
        self.edit(MESSAGE, "  map<string, string> custom_params = 16;", "  map<string, bytes> custom_params = 16;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Message.custom_params: map value type changed "
            "string -> bytes (JSON break: string and bytes are encoded differently)")

    # -- types ----------------------------------------------------------------------------------

    def test_message_type_removed(self):
        start = "message Frame {"
        path = os.path.join(self.schemas, FRAME)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text[:text.index(start)])
        self.assert_breaks(
            "imcodec/v1/frame.proto: imcodec.v1.Frame: message type removed or renamed "
            "(wire, JSON and generated-code break)")

    def test_message_type_renamed(self):
        self.edit(MESSAGE, "message MergerRef {", "message MergerReference {")
        self.edit(MESSAGE, "  MergerRef ref = 5;", "  MergerReference ref = 5;")
        # Lines come in type-name order: MergerElement's field before the MergerRef type.
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.MergerElement.ref: type changed message "
            "imcodec.v1.MergerRef -> message imcodec.v1.MergerReference (different message type)",
            "imcodec/v1/message.proto: imcodec.v1.MergerRef: message type removed or renamed "
            "(wire, JSON and generated-code break)")

    # -- enums ----------------------------------------------------------------------------------

    def test_enum_value_renumbered(self):
        self.edit(MESSAGE, "  PRIORITY_LOW = 3;", "  PRIORITY_LOW = 7;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.Priority.PRIORITY_LOW: enum value number changed 3 -> 7 "
            "(wire break)")

    def test_enum_value_removed(self):
        self.edit(EVENTS, "  TYPING_STATE_STOPPED = 2;\n", "")
        self.assert_breaks(
            "imcodec/v1/events.proto: imcodec.v1.TypingState.TYPING_STATE_STOPPED: enum value 2 removed "
            "without reserving its number or name (wire and JSON break)")

    def test_enum_value_removed_with_reserved_number_and_name(self):
        self.edit(EVENTS, "  TYPING_STATE_STOPPED = 2;\n", "  reserved 2;\n  reserved \"TYPING_STATE_STOPPED\";\n")
        self.assert_compatible()

    def test_enum_value_renamed(self):
        self.edit(EVENTS, "  TYPING_STATE_STOPPED = 2;", "  TYPING_STATE_PAUSED = 2;")
        self.assert_breaks(
            "imcodec/v1/events.proto: imcodec.v1.TypingState.TYPING_STATE_STOPPED: enum value 2 renamed to "
            "TYPING_STATE_PAUSED (JSON break)")

    def test_reserved_enum_number_reused(self):
        self.edit(MESSAGE, "  reserved 7, 9;", "  GROUP_INFO_CHANGE_TYPE_AVATAR = 7;\n  reserved 9;")
        self.assert_breaks(
            "imcodec/v1/message.proto: imcodec.v1.GroupInfoChangeType: reserved number 7 no longer reserved; "
            "now used by value GROUP_INFO_CHANGE_TYPE_AVATAR = 7 (wire break)")

    # -- compatible additions -------------------------------------------------------------------

    def test_new_field(self):
        self.edit(MESSAGE, "  string sender_nickname = 22 [(pb_c_field).string_as_bytes = true];\n",
                  "  string sender_nickname = 22 [(pb_c_field).string_as_bytes = true];\n"
                  "  string sender_avatar_url = 901 [(pb_c_field).string_as_bytes = true];\n")
        self.assert_compatible("1 field, 0 values and 0 types added")

    def test_new_message(self):
        path = os.path.join(self.schemas, FRAME)
        with open(path, "a") as f:
            f.write("\n// A keep-alive.\nmessage KeepAlive {\n  uint64 nonce = 1;\n}\n")
        self.assert_compatible("1 field, 0 values and 1 type added")

    def test_new_enum_value(self):
        self.edit(MESSAGE, "  PRIORITY_LOW = 3;\n", "  PRIORITY_LOW = 3;\n  PRIORITY_URGENT = 4;\n")
        self.assert_compatible("1 value")

    def test_new_oneof_member(self):
        self.edit(FRAME, "    MergerPayload merger_payload = 33;\n",
                  "    MergerPayload merger_payload = 33;\n    TypingEvent typing_again = 902;\n")
        self.assert_compatible("1 field")

    def test_new_reserved_range(self):
        self.edit(FRAME, "  uint32 min_reader_version = 2;\n",
                  "  uint32 min_reader_version = 2;\n  reserved 903 to 909;\n  reserved \"legacy\";\n")
        self.assert_compatible()

    def test_comment_change(self):
        self.edit(FRAME, "  // Matches a request with its answer:", "  // Pairs a request with its answer:")
        self.assert_compatible()

    # -- errors ---------------------------------------------------------------------------------

    def test_protoc_failure_exits_2_with_its_error(self):
        self.edit(FRAME, "  uint32 min_reader_version = 2;", "  uint32 min_reader_version = 2")
        proc = self.run_script()
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("protoc failed", proc.stderr)
        self.assertIn("frame.proto", proc.stderr)

    def test_usage_error_exits_2(self):
        proc = self.run_script("--no-such-option")
        self.assertEqual(proc.returncode, 2)

    def test_update_baseline_writes_then_refuses_a_break(self):
        baseline = os.path.join(self.tmp, "baseline", "v1.binpb")
        cmd = [SCRIPT, "--baseline", baseline, "--schemas", self.schemas]
        first = subprocess.run(cmd + ["--update-baseline"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
        self.assertEqual(first.returncode, 0, first.stderr)
        check = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.edit(MESSAGE, "  uint32 random = 4;", "  uint32 nonce = 4;")
        second = subprocess.run(cmd + ["--update-baseline"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True)
        self.assertEqual(second.returncode, 1)
        self.assertIn("baseline not updated", second.stderr)


if __name__ == "__main__":
    unittest.main()
