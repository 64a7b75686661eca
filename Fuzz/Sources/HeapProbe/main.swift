// The heap probe: the peak heap of decoding adversarial and realistic inputs, measured by counting
// every malloc and free of the process (HeapCounter interposes the allocator). Run it with
// `Fuzz/run --heap`; it prints one line per input and exits 1 when a decode's peak passes the bound
//
//     peak heap during the decode - heap before it (the input already allocated)
//         <= maxDecodedMemory (default 16 x input + 1 MiB) + 64 KiB
//
// Only public API is used for the measured decode; the inputs come from the library's test-only
// IMCodecTestSupport (AdversarialInputs, Wire), so another checkout measured with
// IMCODEC_FUZZ_LIBRARY=/path Fuzz/run --heap must have them too.
import Foundation
import HeapCounter
import IMCodec
import IMCodecTestSupport

/// The adversarial families of HardeningTests (IMCodecTestSupport's ``AdversarialInputs``), with
/// 16-byte repeated strings among them, `size` bytes each.
func families(size: Int) -> [(String, [UInt8])] {
    var families = AdversarialInputs.families(size: size)
    families.insert(("repeated 16-byte strings", AdversarialInputs.repeatedStrings16(size: size)), at: 3)
    return families
}

/// A history page of realistic messages of about `size` bytes (texts, ids, conversations).
func historyPage(bytes size: Int) -> [UInt8] {
    var page = HistoryResponse()
    page.conversation = .group("@TGS#2J4SZEAEL")
    var total = 0
    var i = 0
    while total < size {
        var message = Message.groupText(
            from: "user_\(10_000 + i % 97)",
            group: "@TGS#2J4SZEAEL",
            i % 3 == 0 ? "好的，明天见 🙂 message \(i)" : "see you tomorrow at the usual place, message number \(i)",
            clientMsgID: "cli-7f3a9c2e-\(i)"
        )
        message.serverMsgUID = "144115233874815003-1732190200-\(i)"
        message.seq = UInt64(4000 + i)
        message.serverTimeMs = 1_732_190_200_000 + Int64(i)
        message.senderNickname = "Li Lei"
        total += message.serializedBytes().count + 3
        page.messages.append(message)
        i += 1
    }
    return Frame(.historyResponse(page)).serializedBytes()
}

struct Row {
    let name: String
    let input: Int
    let result: String
    let peak: Int
    let retained: Int
    let limit: Int
}

/// Decodes `bytes` once and measures the peak heap above what was live before.
func measure(_ name: String, _ bytes: [UInt8], options: DecodingOptions = DecodingOptions(), limit: Int? = nil) -> Row {
    // Warm up (Swift runtime metadata, lazily created tables), then measure a fresh decode.
    if bytes.count <= 1 << 16 { _ = try? Frame(serializedBytes: bytes, options: options) }
    let before = heap_counter_live()
    heap_counter_reset_peak()
    var retained = 0
    let result: String
    do {
        let frame = try Frame(serializedBytes: bytes, options: options)
        retained = Int(heap_counter_live() - before)
        result = "decoded"
        withExtendedLifetime(frame) {}
    } catch {
        result = error.code.rawValue
    }
    let peak = Int(heap_counter_peak() - before)
    return Row(
        name: name,
        input: bytes.count,
        result: result,
        peak: peak,
        retained: retained,
        limit: limit ?? 16 * bytes.count + (1 << 20)
    )
}

func size(_ bytes: Int) -> String {
    bytes < 1 << 20
        ? String(format: "%.1f KiB", Double(bytes) / 1024) : String(format: "%.2f MiB", Double(bytes) / 1_048_576)
}

guard heap_counter_is_active() != 0 else {
    FileHandle.standardError.write(Data("heap-probe: the allocator is not interposed; cannot measure\n".utf8))
    exit(2)
}

var rows: [Row] = []
let mebibyte = 1 << 20
for (name, bytes) in families(size: mebibyte) {
    rows.append(measure("\(name), 1 MiB", bytes))
}
for (name, bytes) in families(size: 64 << 10) {
    rows.append(
        measure(
            "\(name), 64 KiB, no limit",
            bytes,
            options: DecodingOptions(maxDecodedMemory: Int.max / 4),
            limit: Int.max
        )
    )
}
// Near the limit: the largest inputs of the most amplifying families that are still accepted.
rows.append(measure("empty sub-messages, 2 KiB", Wire.field(32, Wire.repeated([0x12, 0x00], 1 << 10))))
rows.append(
    measure("empty elements, 12 KiB", AdversarialInputs.frameMessage(Wire.repeated([0xA2, 0x01, 0x00], 4 << 10)))
)
rows.append(measure("unknown varints, 8 KiB", Wire.repeated([0x18, 0x00], 4 << 10)))
rows.append(measure("history page, 64 KiB", historyPage(bytes: 64 << 10)))
rows.append(measure("history page, 1 MiB", historyPage(bytes: mebibyte)))
rows.append(measure("history page, 4 MiB", historyPage(bytes: 4 * mebibyte)))
if let path = CommandLine.arguments.dropFirst().first {
    let folder = URL(fileURLWithPath: path)
    for name in (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted() ?? []
    where name.hasSuffix(".binpb") {
        if let data = try? Data(contentsOf: folder.appendingPathComponent(name)), data.count >= 4 << 10 {
            rows.append(measure("fixture \(name)", [UInt8](data)))
        }
    }
}

print(
    "input                                           bytes  result                peak heap peak/input  value kept  limit (16x+1MiB) within"
)
var failures = 0
for row in rows {
    let within = row.limit == Int.max ? "-" : (row.peak <= row.limit + (64 << 10) ? "yes" : "NO")
    if within == "NO" { failures += 1 }
    let ratio = String(format: "%.1fx", Double(row.peak) / Double(max(row.input, 1)))
    let limit = row.limit == Int.max ? "none" : size(row.limit)
    print(
        row.name.padding(toLength: 44, withPad: " ", startingAt: 0),
        String(row.input).leftPadded(8),
        " ",
        row.result.padding(toLength: 19, withPad: " ", startingAt: 0),
        size(row.peak).leftPadded(11),
        ratio.leftPadded(10),
        size(row.retained).leftPadded(11),
        limit.leftPadded(17),
        within.leftPadded(7)
    )
}
exit(failures == 0 ? 0 : 1)

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
