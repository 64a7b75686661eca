// The adversarial inputs of the memory bounds (issue 4), shared by HardeningTests and the heap
// probe (Fuzz/run --heap). Test-only, like the rest of IMCodecTestSupport.
import IMCodec

/// The adversarial inputs of the issue (empty map entries, unknown varints, repeated strings, empty
/// sub-messages, and more), `size` bytes each, and the realistic frames they must not hurt.
public enum AdversarialInputs {
    /// Each family's name and its input of about `size` bytes.
    public static func families(size: Int) -> [(String, [UInt8])] {
        [
            // Frame.message { custom_params: {} × n }: 3 bytes each; a protobuf-c entry struct,
            // pointer and scan slot, and a Swift dictionary slot each.
            ("empty map entries", frameMessage(Wire.repeated([0x82, 0x01, 0x00], (size - 8) / 3))),
            // Frame field 3 (unknown), varint 0, n times: 2 bytes each; a 24-byte unknown-field
            // record, a copy and a scan slot each.
            ("unknown varints", Wire.repeated([0x18, 0x00], size / 2)),
            // Frame.message { target_receivers: "" × n }: 2 bytes each.
            ("empty repeated strings", frameMessage(Wire.repeated([0x62, 0x00], (size - 8) / 2))),
            // Frame.history_response { messages: {} × n }: 2 bytes each; a 264-byte protobuf-c
            // Message and a 472-byte Swift Message each.
            ("empty sub-messages", Wire.field(32, Wire.repeated([0x12, 0x00], (size - 8) / 2))),
            // Frame.message { elements: {} × n }: 3 bytes each; a 208-byte Swift MessageElement each.
            ("empty elements", frameMessage(Wire.repeated([0xA2, 0x01, 0x00], (size - 8) / 3))),
            // Frame.schema_version (a varint field) sent length-delimited and empty, n times: 2 bytes
            // each, 8 after transcoding.
            ("wire-type mismatches", Wire.repeated([0x0A, 0x00], size / 2)),
        ]
    }

    public static var names: [String] { families(size: 64).map(\.0) }

    public static func input(_ name: String, size: Int) -> [UInt8] { families(size: size).first { $0.0 == name }!.1 }

    /// Frame.message { target_receivers: 16 bytes × n }: heap strings in Swift, about 9 × input.
    public static func repeatedStrings16(size: Int) -> [UInt8] {
        frameMessage(Wire.repeated([0x62, 0x10] + Array("0123456789abcdef".utf8), (size - 8) / 18))
    }

    public static func frameMessage(_ payload: [UInt8]) -> [UInt8] { Wire.field(10, payload) }

    /// A history page of realistic messages of about `size` bytes.
    public static func historyPage(bytes size: Int) -> [UInt8] {
        var random = RandomMessages(seed: 4)
        var page = HistoryResponse()
        page.conversation = .group("@TGS#2J4SZEAEL")
        var total = 0
        while total < size {
            var message = random.message(depth: 1)
            message.customParams = [:]
            total += message.serializedBytes().count + 4
            page.messages.append(message)
        }
        return Frame(.historyResponse(page)).serializedBytes()
    }
}
