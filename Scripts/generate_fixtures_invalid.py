"""The invalid-input fixtures (Fixtures/invalid/), defined as code (Scripts/generate-fixtures).

Every case is an input that IMCodec must reject when decoding it as imcodec.v1.Frame, with one
error code and, where it is well defined, the byte offset of the first problem. Each input holds
exactly one problem; everything before it is a valid encoding, so the first problem is the one
named. Offsets come from a MARK placed in the piece tree (see generate_fixtures_wire.py).

Offset conventions (also in Fixtures/README.md): the offset is that of the first byte of the
offending item:
- a tag that cannot be read or is not allowed (truncated, over-long, field number 0 or > 2^29-1,
  wire type 3/4/6/7): the tag's first byte (a known field with the wrong wire type is not an
  error: it is kept as an unknown field, see the valid wire_type_mismatch_* cases);
- a varint or fixed value that is over-long or cut short: the value's first byte;
- a declared length that is too large or runs past the end of the input or of the enclosing
  message: the length prefix's first byte;
- invalid UTF-8: the first byte of the first ill-formed sequence (or stray byte);
- nesting deeper than the limit: the tag of the field that opens the first message too deep;
- input over options.maxInputSize: null (the input as a whole).

Field numbers used below (see Schemas/imcodec/v1/*.proto):
  Frame: 1 schema_version, 2 min_reader_version, 10 message, 14 group_read_members, 20 recall,
         25 system_notice
  Message: 1 client_msg_id, 3 seq, 5 sender_id, 6 conversation, 7 client_time_ms, 16 custom_params,
           17 expansion, 20 elements, 22 sender_nickname
  Conversation: 1 type, 2 target_id     MessageRef: 1 client_msg_id, 2 server_msg_uid, 4 conversation
  MessageElement: 1 text, 6 file, 7 location, 10 merger     TextElement: 1 text
  FileElement: 1 uuid, 2 name, 3 size    LocationElement: 1 description, 2 longitude, 3 latitude
  MergerElement: 1 title, 4 messages     map entries: 1 key, 2 value
"""

from generate_fixtures_wire import (
    EGROUP,
    I32,
    I64,
    LEN,
    MARK,
    SGROUP,
    VARINT,
    Field,
    build,
    d,
    nesting_bomb,
    raw_s,
    s,
    tag,
    u,
    varint,
)

FRAME = "imcodec.v1.Frame"
# The depth cases name their limit (options.maxDepth) rather than rely on the default, so that they
# mean the same whatever the default is.
DEPTH_LIMIT = 100

# Realistic building blocks --------------------------------------------------------------------

VERSION = [u(1, 1), u(2, 1)]  # schema_version: 1, min_reader_version: 1


def group_conversation(target=b"@TGS#2J4SZEAEL"):
    return Field(6, [u(1, 2), Field(2, [target])])  # Conversation { type: GROUP, target_id }


def c2c_conversation(peer=b"user_10086"):
    return Field(6, [u(1, 1), Field(2, [peer])])  # Conversation { type: ONE_TO_ONE, target_id }


def envelope(client_msg_id="cli-7f3a9c2e-0001", sender="user_10010", conversation=None):
    """The usual head of a Message: ids, sender, conversation, client time."""
    return [
        s(1, client_msg_id),
        u(3, 4021),
        u(4, 1804289383),
        s(5, sender),
        conversation if conversation is not None else c2c_conversation(),
        u(7, 1732186800000),
    ]


def text_element(text):
    return Field(20, [Field(1, [s(1, text)])])  # elements { text { text } }


def frame_with_message(message_pieces, after=()):
    return VERSION + [Field(10, message_pieces)] + list(after)


def padding_field(size=64):
    """An unknown length-delimited Frame field (99) of `size` bytes: valid, skipped by readers."""
    return Field(99, [b"p" * size])


# Cases ------------------------------------------------------------------------------------------
# Each case: file (without .bin), code, pieces or a builder, options, description.
# `build` returns the bytes and the MARK offset; cases whose offset is null say offset=None.

CASES = []


def case(file, code, description, pieces=None, data=None, offset="mark", options=None):
    if pieces is not None:
        data, mark = build(pieces)
        if offset == "mark":
            offset = mark
            if offset is None:
                raise ValueError(f"{file}: no MARK")
    elif offset == "mark":
        raise ValueError(f"{file}: raw data needs an explicit offset")
    CASES.append(
        {
            "file": file + ".bin",
            "type": FRAME,
            "code": code,
            "offset": offset,
            "options": options or {},
            "description": description,
            "data": data,
        }
    )


# --- truncated ---------------------------------------------------------------------------------

case("truncated_varint_at_end", "truncated",
     "Input ends inside a varint: Frame.schema_version's value is 0x96 (continuation bit set) and "
     "nothing follows. Offset: the value's first byte.",
     pieces=[tag(1, VARINT), MARK, b"\x96"])

case("truncated_varint_in_submessage", "truncated",
     "Frame.message ends inside the varint of Message.client_time_ms "
     "(its last byte has the continuation bit); the input itself goes on with "
     "Frame.min_reader_version. Offset: the varint's first byte.",
     pieces=[u(1, 1), Field(10, [s(1, "cli-7f3a9c2e-0001"), s(5, "user_10010"),
                                 tag(7, VARINT), MARK, varint(1732186800000)[:3]]),
             u(2, 1)])

case("truncated_tag", "truncated",
     "Input ends inside a two-byte tag (0x8A of field 33 merger_payload, continuation bit set). "
     "Offset: the tag's first byte.",
     pieces=VERSION + [MARK, b"\x8a"])

case("truncated_tag_in_submessage", "truncated",
     "Frame.message ends after the first byte (0x82) of the two-byte tag of Message.custom_params "
     "(16, LEN = 0x82 0x01); the input goes on with Frame.min_reader_version. "
     "Offset: the tag's first byte.",
     pieces=[u(1, 1), Field(10, envelope() + [MARK, b"\x82"]), u(2, 1)])

case("truncated_length_prefix", "truncated",
     "Input ends inside the length prefix of Frame.message (0x52 then 0xAC, continuation bit set). "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [tag(10, LEN), MARK, b"\xac"])

case("length_past_end_top_level", "truncated",
     "Frame.message declares 200 bytes but a much shorter (valid) Message follows and the input "
     "ends. "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [Field(10, envelope() + [text_element("晚上一起吃饭吗？")], length=200,
                             mark="length")])

case("length_past_end_in_submessage", "truncated",
     "Inside Frame.message, Message.sender_id declares 60 bytes: the input has them (an unknown "
     "64-byte Frame field 99 follows the message) but the enclosing Message ends after 10. "
     "Offset: sender_id's length prefix.",
     pieces=[u(1, 1),
             Field(10, [s(1, "cli-7f3a9c2e-0002"), Field(5, [b"user_10010"], length=60,
                                                          mark="length")]),
             padding_field(64)])

case("length_past_end_nested_conversation", "truncated",
     "Frame.recall.message (a MessageRef) holds a Conversation whose target_id declares 40 bytes "
     "while the Conversation is 18 bytes long; more RecallEvent fields and the input follow. "
     "Offset: target_id's length prefix.",
     pieces=VERSION + [Field(20, [
         Field(1, [s(1, "cli-7f3a9c2e-0003"),
                   Field(4, [u(1, 2), Field(2, [b"@TGS#2J4SZEAEL"], length=40, mark="length")]),
                   s(5, "user_10010")]),
         s(2, "user_10010"), s(3, "sent to the wrong group by mistake"), u(4, 1732186900000)])])

case("truncated_fixed64_longitude", "truncated",
     "Input ends 3 bytes into the 8-byte double LocationElement.longitude (tag 0x11); every "
     "declared length is consistent with the cut. Offset: the fixed64 value's first byte.",
     pieces=VERSION + [Field(10, envelope() + [Field(20, [Field(7, [
         s(1, "深圳市南山区科技园"), tag(2, I64), MARK, b"\x3b\xdf\x4f"])])])])

case("truncated_fixed64_latitude_in_submessage", "truncated",
     "LocationElement ends 5 bytes into its double latitude (tag 0x19); the element chain, "
     "message and input go on. Offset: the fixed64 value's first byte.",
     pieces=VERSION + [Field(10, envelope() + [
         Field(20, [Field(7, [s(1, "Tour Eiffel"), d(2, 2.294481), tag(3, I64), MARK,
                              b"\x00\x00\x00\x00\x00"])]),
         text_element("here")])])

case("truncated_fixed32_unknown_field", "truncated",
     "An unknown Frame field 7 with wire type 5 (fixed32) has only 2 of its 4 bytes before the "
     "input ends. Unknown fields are skipped, but they must still be whole. "
     "Offset: the fixed32 value's first byte.",
     pieces=VERSION + [tag(7, I32), MARK, b"\x12\x34"])

case("truncated_unknown_length_delimited", "truncated",
     "An unknown Frame field 99 declares 16 bytes and only 4 follow. "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [Field(99, [b"abcd"], length=16, mark="length")])

case("length_2_31_minus_1_past_end", "truncated",
     "Frame.message declares 2^31-1 bytes (FF FF FF FF 07), the largest length that is not "
     "malformed, far past the end of the input. Offset: the length prefix's first byte.",
     pieces=VERSION + [tag(10, LEN), MARK, varint(2 ** 31 - 1), s(1, "cli-7f3a9c2e-000b")])

# --- malformed ---------------------------------------------------------------------------------

case("varint_11_bytes", "malformed",
     "Frame.schema_version's varint has 11 bytes (ten 0x80 then 0x01); at most 10 are allowed. "
     "Offset: the varint's first byte.",
     pieces=[tag(1, VARINT), MARK, b"\x80" * 10 + b"\x01", u(2, 1)])

case("varint_11_bytes_in_tag", "malformed",
     "A tag encoded as an 11-byte varint after a valid Frame.schema_version. "
     "Offset: the tag's first byte.",
     pieces=[u(1, 1), MARK, b"\x88" + b"\x80" * 9 + b"\x00", b"\x01"])

case("varint_11_bytes_in_length", "malformed",
     "Message.sender_id's length prefix is an 11-byte varint (0x8A then nine 0x80 then 0x00). "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [Field(10, [s(1, "cli-7f3a9c2e-0004"), tag(5, LEN), MARK,
                                  b"\x8a" + b"\x80" * 9 + b"\x00", b"user_10010"])])

case("field_number_0", "malformed",
     "A varint field with field number 0 (tag byte 0x00) after Frame.schema_version. "
     "Offset: the tag.",
     pieces=[u(1, 1), MARK, b"\x00\x01", u(2, 1)])

case("field_number_0_in_submessage", "malformed",
     "A length-delimited field with field number 0 (tag 0x02) inside Frame.message. "
     "Offset: the tag.",
     pieces=VERSION + [Field(10, envelope() + [MARK, tag(0, LEN), varint(2), b"hi"])])

case("field_number_2_29", "malformed",
     "Field number 2^29 (one past the largest, 2^29-1): tag 0x80 0x80 0x80 0x80 0x10, wire type 0. "
     "Offset: the tag's first byte.",
     pieces=VERSION + [MARK, tag(2 ** 29, VARINT), b"\x01"])

case("field_number_2_32_minus_1", "malformed",
     "Field number 2^32 - 1 inside Frame.message (a 5-byte tag varint of 35 bits). Google's C++ "
     "parser (3.21) drops the bits above 32 and reads an unknown field 2^29-1; IMCodec rejects "
     "the tag. Offset: the tag's first byte.",
     pieces=VERSION + [Field(10, envelope() + [MARK, tag(2 ** 32 - 1, VARINT), b"\x01"])])

case("wire_type_3_start_group", "malformed",
     "An unknown field 99 with wire type 3 (start group), followed by its matching end group: "
     "groups are not accepted at all. Offset: the start-group tag.",
     pieces=VERSION + [MARK, tag(99, SGROUP), u(1, 5), tag(99, EGROUP)])

case("wire_type_4_end_group", "malformed",
     "A lone end-group tag (field 99, wire type 4) inside Frame.message. Offset: the tag.",
     pieces=VERSION + [Field(10, envelope() + [MARK, tag(99, EGROUP)])])

case("wire_type_3_on_known_field", "malformed",
     "Message.elements (20) with wire type 3 (start group): 'malformed', not kept as an unknown "
     "field like a wire-type mismatch, because wire types 3, 4, 6 and 7 are rejected when the tag "
     "is read, before the field is looked up. Offset: the tag's first byte.",
     pieces=VERSION + [Field(10, envelope() + [MARK, tag(20, SGROUP), tag(20, EGROUP)])])

case("wire_type_6", "malformed",
     "An unknown field 99 with wire type 6 (not defined). Offset: the tag's first byte.",
     pieces=VERSION + [MARK, tag(99, 6), b"\x00"])

case("wire_type_7", "malformed",
     "A field with wire type 7 (not defined) inside a TextElement: field 2, tag 0x17. "
     "Offset: the tag.",
     pieces=VERSION + [Field(10, envelope() + [Field(20, [Field(1, [s(1, "hi"), MARK,
                                                                     tag(2, 7), b"\x00"])])])])

case("length_0xffffffff", "malformed",
     "Message.sender_id declares 0xFFFFFFFF bytes (varint FF FF FF FF 0F), over 2^31-1. "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [Field(10, [s(1, "cli-7f3a9c2e-0005"), tag(5, LEN), MARK,
                                  b"\xff\xff\xff\xff\x0f", b"user_10010"])])

case("length_2_31", "malformed",
     "Frame.message declares 2^31 bytes (varint 80 80 80 80 08), one over 2^31-1. "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [tag(10, LEN), MARK, varint(2 ** 31), s(1, "cli-7f3a9c2e-0006")])

case("length_2_64_minus_1", "malformed",
     "Frame.system_notice declares 2^64-1 bytes (a 10-byte varint). "
     "Offset: the length prefix's first byte.",
     pieces=VERSION + [tag(25, LEN), MARK, varint(2 ** 64 - 1), s(1, "kicked_offline")])

# --- invalidUTF8 -------------------------------------------------------------------------------

case("utf8_overlong_text", "invalidUTF8",
     "TextElement.text holds 'see ' + C0 AF ('/' as an overlong 2-byte sequence) + 'etc/passwd'. "
     "Offset: the C0 byte.",
     pieces=VERSION + [Field(10, envelope() + [Field(20, [Field(1, [
         raw_s(1, b"see ", b"\xc0\xaf", b"etc/passwd")])])])])

case("utf8_overlong_3_byte_sender_id", "invalidUTF8",
     "Message.sender_id holds E0 80 80 (U+0000 as an overlong 3-byte sequence). "
     "Offset: the E0 byte.",
     pieces=VERSION + [Field(10, [s(1, "cli-7f3a9c2e-0007"),
                                  raw_s(5, b"user_", b"\xe0\x80\x80", b"10010")])])

case("utf8_surrogate_nickname", "invalidUTF8",
     "Message.sender_nickname holds an emoji in CESU-8 / Java modified UTF-8: ED A0 BD ED B8 80 "
     "(surrogates U+D83D U+DE00), not UTF-8. Offset: the first ED byte.",
     pieces=VERSION + [Field(10, envelope() + [text_element("hello"),
                                               raw_s(22, "小明".encode(), b"\xed\xa0\xbd\xed\xb8\x80")])])

case("utf8_lone_continuation_target_id", "invalidUTF8",
     "Conversation.target_id holds a lone continuation byte 0x80 in the middle of a group id. "
     "Offset: the 0x80 byte.",
     pieces=VERSION + [Field(10, envelope(conversation=Field(6, [
         u(1, 2), raw_s(2, b"@TGS#2J4S", b"\x80", b"ZEAEL")])) + [text_element("hi all")])])

case("utf8_truncated_sequence_file_name", "invalidUTF8",
     "FileElement.name is '季度' followed by E6 8A, the first two of the three bytes of '报', and "
     "then the string ends (the file size field follows). Offset: the E6 byte.",
     pieces=VERSION + [Field(10, envelope() + [Field(20, [Field(6, [
         s(1, "1400123456_ab12cd34ef56"), raw_s(2, "季度".encode(), b"\xe6\x8a"),
         u(3, 2097152)])])])])

case("utf8_byte_ff_map_key", "invalidUTF8",
     "A Message.custom_params key holds 0xFF (never valid in UTF-8): key 'biz' FF, value 'order'. "
     "Map keys are strings too. Offset: the FF byte.",
     pieces=VERSION + [Field(10, envelope() + [
         Field(16, [raw_s(1, b"biz", b"\xff"), s(2, "order")]), text_element("see order")])])

case("utf8_byte_fe_map_value", "invalidUTF8",
     "A Message.expansion value holds 0xFE: key 'like', value '3' FE. Offset: the FE byte.",
     pieces=VERSION + [Field(10, envelope() + [
         Field(17, [s(1, "like"), raw_s(2, b"3", b"\xfe")]), text_element("nice")])])

case("utf8_above_u10ffff_notice_text", "invalidUTF8",
     "SystemNotice.text holds F4 90 80 80, which would be U+110000, past the last code point. "
     "Offset: the F4 byte.",
     pieces=VERSION + [Field(25, [s(1, "kicked_offline"),
                                  raw_s(3, "您的账号已在其他设备登录 ".encode(), b"\xf4\x90\x80\x80")])])

case("utf8_latin1_recall_reason", "invalidUTF8",
     "RecallEvent.reason is Latin-1 'caf' E9 (é as one ISO-8859-1 byte), followed by ' au lait'. "
     "Offset: the E9 byte.",
     pieces=VERSION + [Field(20, [
         Field(1, [s(1, "cli-7f3a9c2e-0008"), s(2, "BVQ2-4H3S-A8E5-4NMK")]),
         s(2, "user_10010"), raw_s(3, b"caf", b"\xe9", b" au lait"), u(4, 1732186900000)])])

case("utf8_bad_second_member_id", "invalidUTF8",
     "GroupReadMembers.member_ids: the first id is valid, the second is 'user_' C3 28 (a 2-byte "
     "lead followed by an ASCII byte). Offset: the C3 byte.",
     pieces=VERSION + [Field(14, [
         Field(1, [s(1, "cli-7f3a9c2e-0009"), s(2, "BVQ2-4H3S-A8E5-4NMK")]), u(2, 1),
         s(3, "user_20001"), raw_s(3, b"user_", b"\xc3\x28"), u(4, 2)])])

case("utf8_in_nested_merger_message", "invalidUTF8",
     "A TextElement three levels down (Frame > Message > merger > Message > TextElement) holds the "
     "lone byte 0xBF. Offset: the BF byte.",
     pieces=VERSION + [Field(10, envelope() + [Field(20, [Field(10, [
         s(1, "群聊的聊天记录"), Field(4, [s(5, "user_20001"), Field(20, [Field(1, [
             raw_s(1, b"ok ", b"\xbf")])])])])])])])

# --- tooDeep -----------------------------------------------------------------------------------

_bomb, _bomb_offset = nesting_bomb(100_000, DEPTH_LIMIT)
case("nesting_bomb_100000", "tooDeep",
     "100,000 nested messages (Frame > message > elements > merger > messages > elements > ...), "
     "each level only the tag and varint length of the next, built bottom-up. A recursive decoder "
     "overflows its stack; the limit (options.maxDepth 100, top level = 1) stops it at level 101. "
     "Offset: the tag that opens level 101.",
     data=_bomb, offset=_bomb_offset, options={"maxDepth": DEPTH_LIMIT})

_deep, _deep_offset = nesting_bomb(101, DEPTH_LIMIT)
case("nesting_101", "tooDeep",
     "101 nested messages (the same chain as the bomb; level 101 is a Message with a sender_id), "
     "one over options.maxDepth 100. Fixtures/valid/nesting_depth_100 is the same chain at "
     "exactly 100. Google's parsers accept it (they do not count the top level). "
     "Offset: the tag that opens level 101.",
     data=_deep, offset=_deep_offset, options={"maxDepth": DEPTH_LIMIT})

case("depth_4_with_max_depth_3", "tooDeep",
     "An ordinary text message (Frame 1 > Message 2 > MessageElement 3 > TextElement 4) decoded "
     "with options.maxDepth 3; the Conversation at level 3 is fine. "
     "Offset: the tag of MessageElement.text, which opens level 4.",
     pieces=VERSION + [Field(10, envelope() + [Field(20, [Field(1, [s(1, "hi")], mark="tag")])])],
     options={"maxDepth": 3})

# --- tooLarge ----------------------------------------------------------------------------------


def _sized_text_frame(total):
    """A valid one-to-one text frame of exactly `total` bytes."""
    for n in range(total, 0, -1):
        data, _ = build(frame_with_message(envelope() + [text_element("a" * n)]))
        if len(data) == total:
            return data
    raise ValueError(total)


case("oversize_1025_with_max_1024", "tooLarge",
     "A valid 1,025-byte text message frame, decoded with options.maxInputSize 1024. "
     "Offset: null (the input as a whole).",
     data=_sized_text_frame(1025), offset=None, options={"maxInputSize": 1024})

case("oversize_nonempty_with_max_0", "tooLarge",
     "A valid 2-byte frame (schema_version: 1) with options.maxInputSize 0: only empty input fits. "
     "Offset: null.",
     data=build([u(1, 1)])[0], offset=None, options={"maxInputSize": 0})

# --- wire-type mismatches ----------------------------------------------------------------------
# A known field with the wrong wire type is not an error: IMCodec keeps it as an unknown field, as
# Google's parsers do (the valid cases wire_type_mismatch_*.txtpb, encoded with future.proto's
# Mismatch* helpers). Only a wire type that is not protobuf at all (3, 4, 6, 7) is rejected: see
# "malformed" above.

# --- no longer invalid -------------------------------------------------------------------------
# U+0000 in a map key or value and a singular sub-message that occurs twice were refused with
# `unsupported` while protobuf-c could not represent them. Google's parsers accept both (a repeated
# sub-message merges), and so does IMCodec: they are valid cases now, encoded by Google
# (Fixtures/valid/nul_in_*.txtpb, *_twice.txtpb and the other duplicate cases).

# --- unsupportedVersion ------------------------------------------------------------------------
# Well-formed protobuf that Google's parsers accept, refused by IMCodec as a reader rule: the
# writer says readers below schema version 4 cannot act on the frame (Frame.min_reader_version),
# and this reader implements version 3. DecodingOptions.acceptsNewerFrames decodes it anyway
# (Tests/IMCodecTests/VersionTests.swift).

case("min_reader_version_4", "unsupportedVersion",
     "A text message frame from a schema-version-4 writer with min_reader_version 4: a version-3 "
     "reader refuses it (Google's parsers, which know no reader rule, accept it). Offset: null.",
     data=build([u(1, 4), u(2, 4), Field(10, envelope() + [text_element("from the future")])])[0],
     offset=None)
