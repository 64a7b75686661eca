"""Decoder entry points: `WireDecoder.withView(M.self, bytes) { view in ... }` for each message."""


def print_decoder_entries(p, schema, messages):
    """`extension WireDecoder` with one `withView` per message type (map entries have none)."""
    entries = [full for full in messages if not schema.messages[full][1].options.map_entry]
    with p.block("extension WireDecoder {"):
        for i, full in enumerate(entries):
            if i:
                p.line()
            _print_with_view(p, schema, full)
    p.line()


def _print_with_view(p, schema, full):
    name = schema.swift_name(full)
    p.line("/// Decodes a `%s` and lends `body` a view of it (``%s/View``), read in place" % (full[1:], name))
    p.line("/// without building values; the view cannot leave `body`.")
    p.line("/// - Throws: ``IMCodecError`` when the bytes do not decode, or whatever `body` throws.")
    p.line("@inlinable")
    p.line("public func withView<Bytes: Collection, R>(")
    with p.indent():
        p.line("_ type: %s.Type, _ bytes: Bytes, _ body: (%s.View) throws -> R" % (name, name))
    with p.block(") throws -> R where Bytes.Element == UInt8 {"):
        call = "try DecodePipeline.withMessage(%s._protobufCDescriptor, bytes, options: options, arena: _arena()) {"
        with p.block(call % name, "}.get()"):
            p.line("message in Result { try body(%s.View(_message: message)) }" % name)
