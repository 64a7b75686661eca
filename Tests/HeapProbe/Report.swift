import CAllocationCounter
import Foundation
import IMCodec
import IMCodecTestSupport

/// The heap report of `Fuzz/run --heap`: the peak heap of decoding adversarial and realistic
/// inputs, each measured as
///
///     peak heap during the decode - heap before it (the input already allocated)
///         <= maxDecodedMemory (default 16 x input + 1 MiB) + 64 KiB
///
/// Only public API is used for the measured decode; the inputs come from IMCodecTestSupport
/// (AdversarialInputs, Wire), shared with HardeningTests.
enum Report {
    struct Row {
        let name: String
        let input: Int
        let result: String
        let peak: Int
        let retained: Int
        let limit: Int
    }

    /// Measures every input, prints the table and returns the exit status (1 when a decode passed
    /// its bound).
    static func run(fixtures: String?) -> Int32 {
        var rows: [Row] = []
        let mebibyte = 1 << 20
        for (name, bytes) in families(size: mebibyte) {
            rows.append(measure("\(name), 1 MiB", bytes))
        }
        let unlimited = DecodingOptions(maxDecodedMemory: Int.max / 4)
        for (name, bytes) in families(size: 64 << 10) {
            rows.append(measure("\(name), 64 KiB, no limit", bytes, options: unlimited, limit: Int.max))
        }
        // Near the limit: the largest inputs of the most amplifying families that are still accepted.
        rows.append(measure("empty sub-messages, 2 KiB", Wire.field(32, Wire.repeated([0x12, 0x00], 1 << 10))))
        let elements = AdversarialInputs.frameMessage(Wire.repeated([0xA2, 0x01, 0x00], 4 << 10))
        rows.append(measure("empty elements, 12 KiB", elements))
        rows.append(measure("unknown varints, 8 KiB", Wire.repeated([0x18, 0x00], 4 << 10)))
        for size in [64 << 10, mebibyte, 4 * mebibyte] {
            rows.append(measure("history page, \(Report.size(size))", AdversarialInputs.historyPage(bytes: size)))
        }
        if let fixtures {
            let folder = URL(fileURLWithPath: fixtures)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: fixtures))?.sorted() ?? []
            where name.hasSuffix(".binpb") {
                if let data = try? Data(contentsOf: folder.appendingPathComponent(name)), data.count >= 4 << 10 {
                    rows.append(measure("fixture \(name)", [UInt8](data)))
                }
            }
        }
        return printTable(rows) == 0 ? 0 : 1
    }

    /// The adversarial families of HardeningTests, with 16-byte repeated strings among them, `size`
    /// bytes each.
    static func families(size: Int) -> [(String, [UInt8])] {
        var families = AdversarialInputs.families(size: size)
        families.insert(("repeated 16-byte strings", AdversarialInputs.repeatedStrings16(size: size)), at: 3)
        return families
    }

    /// Decodes `bytes` once and measures the peak heap above what was live before.
    static func measure(
        _ name: String,
        _ bytes: [UInt8],
        options: DecodingOptions = DecodingOptions(),
        limit: Int? = nil
    ) -> Row {
        // Warm up (Swift runtime metadata, lazily created tables), then measure a fresh decode.
        if bytes.count <= 1 << 16 { _ = try? Frame(serializedBytes: bytes, options: options) }
        let before = allocation_counter_live_bytes()
        allocation_counter_reset_peak()
        var retained = 0
        let result: String
        do {
            let frame = try Frame(serializedBytes: bytes, options: options)
            retained = Int(allocation_counter_live_bytes() - before)
            result = "decoded"
            withExtendedLifetime(frame) {}
        } catch {
            result = error.code.rawValue
        }
        let peak = Int(allocation_counter_peak_bytes() - before)
        let bound = limit ?? 16 * bytes.count + (1 << 20)
        return Row(name: name, input: bytes.count, result: result, peak: peak, retained: retained, limit: bound)
    }

    /// Prints the table; returns the number of rows over their bound.
    static func printTable(_ rows: [Row]) -> Int {
        print(
            "input                                           bytes  result                peak heap peak/input"
                + "  value kept  limit (16x+1MiB) within"
        )
        var failures = 0
        for row in rows {
            let within = row.limit == Int.max ? "-" : (row.peak <= row.limit + (64 << 10) ? "yes" : "NO")
            if within == "NO" { failures += 1 }
            let ratio = String(format: "%.1fx", Double(row.peak) / Double(max(row.input, 1)))
            let limit = row.limit == Int.max ? "none" : size(row.limit)
            print(
                row.name.padding(toLength: 44, withPad: " ", startingAt: 0),
                leftPadded(String(row.input), 8),
                " ",
                row.result.padding(toLength: 19, withPad: " ", startingAt: 0),
                leftPadded(size(row.peak), 11),
                leftPadded(ratio, 10),
                leftPadded(size(row.retained), 11),
                leftPadded(limit, 17),
                leftPadded(within, 7)
            )
        }
        return failures
    }

    static func size(_ bytes: Int) -> String {
        bytes < 1 << 20
            ? String(format: "%.1f KiB", Double(bytes) / 1024) : String(format: "%.2f MiB", Double(bytes) / 1_048_576)
    }

    static func leftPadded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
