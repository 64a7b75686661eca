// imcodec-heap-probe: one decode, measured in a process that does nothing else.
//
// HardeningTests spawns it for its heap measurements. The test process runs other suites in
// parallel, so the C allocator's whole-process figures (mallinfo2) it used to read counted their
// allocations too and failed by chance; here the only allocations between the two readings are
// this decode's. Not a product: it exists for the tests.
//
//     imcodec-heap-probe FILE [--max-input-size N] [--max-depth N] [--max-field-count N]
//                             [--max-decoded-memory N]
//
// It reads FILE, decodes it once as a Frame to warm up (the Swift runtime's metadata and caches are
// made on first use and stay: they are not the value's), then decodes it again with
// DecodeProbe.decode between two readings of heap_statistics_bytes_in_use (Tests/HeapStatistics),
// keeping the value alive until the second. It prints `key=value` lines: result (`decoded` or the
// error code), heap (bytes allocated and still held by the decode, or `unavailable` where the C
// library keeps no statistics, e.g. under a sanitizer) and, when decoded, the five DecodeAccounting
// figures.
import CHeapStatistics
import Foundation
import IMCodec

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("imcodec-heap-probe: \(message)\n".utf8))
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard !arguments.isEmpty else { fail("usage: imcodec-heap-probe FILE [--max-input-size N] ...") }
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

func heapInUse() -> Int? {
    let bytes = heap_statistics_bytes_in_use()
    return bytes >= 0 ? Int(bytes) : nil
}

_ = try? DecodeProbe.decode(Frame.self, from: bytes, options: options)

var lines: [String] = []
let before = heapInUse()
do {
    let (frame, accounting) = try DecodeProbe.decode(Frame.self, from: bytes, options: options)
    let after = heapInUse()
    withExtendedLifetime(frame) {}
    lines.append("result=decoded")
    lines.append("heap=" + (before.flatMap { b in after.map { String($0 - b) } } ?? "unavailable"))
    lines.append("estimatedArenaBytes=\(accounting.estimatedArenaBytes)")
    lines.append("estimatedValueBytes=\(accounting.estimatedValueBytes)")
    lines.append("arenaBytesUsed=\(accounting.arenaBytesUsed)")
    lines.append("arenaBytesReserved=\(accounting.arenaBytesReserved)")
    lines.append("wrappedFields=\(accounting.wrappedFields)")
} catch {
    let after = heapInUse()
    lines.append("result=\(error.code.rawValue)")
    lines.append("heap=" + (before.flatMap { b in after.map { String($0 - b) } } ?? "unavailable"))
}
print(lines.joined(separator: "\n"))
