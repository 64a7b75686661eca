import CAllocationCounter
import Foundation
import IMCodec

/// One decode, for HardeningTests' heap measurements.
///
/// It reads the file, decodes it once as a Frame to warm up (the Swift runtime's metadata and caches
/// are made on first use and stay: they are not the value's), then decodes it again with
/// `DecodeProbe.decode` between two readings of the allocation counter, keeping the value alive
/// until the second. It prints `key=value` lines: result (`decoded` or the error code), heap (bytes
/// the decode allocated and still held: the value), peak (the highest heap above what was live
/// before, during the decode), both `unavailable` where the allocator is not interposed (under a
/// sanitizer) and, when decoded, the five DecodeAccounting figures.
enum OneDecode {
    static func run(_ arguments: [String]) -> String {
        var arguments = arguments
        let path = arguments.removeFirst()
        var options = DecodingOptions()
        while !arguments.isEmpty {
            let name = arguments.removeFirst()
            guard let text = arguments.first, let value = Int(text) else { fail("\(name) needs an integer") }
            arguments.removeFirst()
            switch name {
            case "--max-input-size": options.maxInputSize = value
            case "--max-depth": options.maxDepth = value
            case "--max-field-count": options.maxFieldCount = value
            case "--max-decoded-memory": options.maxDecodedMemory = value
            default: fail("unknown option \(name)")
            }
        }
        guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
        let bytes = [UInt8](data)
        let active = allocation_counter_is_active() != 0

        _ = try? DecodeProbe.decode(Frame.self, from: bytes, options: options)

        var lines: [String] = []
        let before = allocation_counter_live_bytes()
        allocation_counter_reset_peak()
        func heapLines() -> [String] {
            // Read both figures before anything here allocates.
            let heap = allocation_counter_live_bytes() - before
            let peak = allocation_counter_peak_bytes() - before
            guard active else { return ["heap=unavailable", "peak=unavailable"] }
            return ["heap=\(heap)", "peak=\(peak)"]
        }
        do {
            let (frame, accounting) = try DecodeProbe.decode(Frame.self, from: bytes, options: options)
            let heap = heapLines()
            withExtendedLifetime(frame) {}
            lines.append("result=decoded")
            lines += heap
            lines.append("estimatedArenaBytes=\(accounting.estimatedArenaBytes)")
            lines.append("estimatedValueBytes=\(accounting.estimatedValueBytes)")
            lines.append("arenaBytesUsed=\(accounting.arenaBytesUsed)")
            lines.append("arenaBytesReserved=\(accounting.arenaBytesReserved)")
            lines.append("wrappedFields=\(accounting.wrappedFields)")
        } catch {
            let heap = heapLines()
            lines.append("result=\(error.code.rawValue)")
            lines += heap
        }
        return lines.joined(separator: "\n")
    }
}
