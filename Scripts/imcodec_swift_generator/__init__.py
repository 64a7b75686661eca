"""IMCodec's Swift generator (the protoc plugin Scripts/protoc-gen-imcodec-swift runs).

For each .proto it writes:

  Generated/<stem>.pb.swift             public value types (structs, enums, oneof enums) and their
                                        canonical wire encoders; pure Swift
  CSeam/Generated/<stem>+View.swift     a read-only, ~Escapable view of every message over
                                        protobuf-c's decoded C struct (`Message.View`, ...), the
                                        values built from the views, and `WireDecoder.withView`
and, once, Generated/IMCodecSchema.swift, the registry of every message type.

Decoding goes through protobuf-c (pre-scan, unpack into an arena, then views read the structs in
place, or values are built through the views). Encoding is generated Swift, written back to front
like upb's encoder: protobuf-c 1.4.1's pack drops -0.0 and omits empty map keys and values, where
Google's encoders keep both, and canonical bytes must match Google's.

Mapping (proto3 -> Swift):
  scalar            -> Int32/Int64/UInt32/UInt64/Float/Double/Bool, default 0/false
  string            -> String ("" default); bytes -> [UInt8]
  enum              -> Swift enum with an `unrecognized(Int32)` case, so unknown numbers survive
  message (single)  -> Optional of the message struct (presence is explicit, as on the wire)
  repeated          -> Array; map<string, string> -> [String: String]
  oneof             -> a nested Swift enum with one case per member, plus a nested `Kind` enum
Every struct keeps `unknownFields`, the fields read from the wire that the schema does not know.

One module per construct, each printing through printer.CodePrinter, which owns indentation:

  printer.py      CodePrinter: lines, indent(), block(opener, closer), doc comments
  names.py        schema names -> Swift names (keywords, initialisms) and protoc-c's C names
  schema.py       the request's messages and enums, field kinds, Swift value types, and the rules a
                  schema must follow (GeneratorError)
  files.py        the generated files and `generate(request) -> CodeGeneratorResponse`
  enums.py        enums
  messages.py     message value types
  oneofs.py       oneofs: the value's enum, the view's enum and accessors, view -> value
  view_fields.py  one field through a view: accessor type, C read, value built from the view
  views.py        Message.View, the decode hooks, values built from views, Message.View.List
  encoders.py     `_encode(to:)`: canonical wire bytes, back to front
  decoders.py     `WireDecoder.withView` entry points

Its output for a small schema with every field kind is committed as Scripts/testdata/golden/ and
checked by Scripts/test_protoc_gen_imcodec_swift.py (`--update` rewrites it).
"""

from .files import generate  # noqa: F401
