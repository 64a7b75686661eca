import Foundation
import IMCodec
import Testing

/// Deep input: the default limits admit the 100 nested merger layers Tencent allows, and decoding
/// them never risks the stack, whatever thread it runs on (see Sources/IMCodec/CSeam/DecodeStack.swift).
@Suite("Depth: 100 merger layers on any thread")
struct DepthTests {
    /// Encodes, decodes with the default options (binary, WireDecoder, the routing view, JSON) and
    /// compares; returns nil when all of it holds, else what failed.
    static func roundTrip(_ frame: Frame) -> String? {
        let bytes = frame.serializedBytes()
        do {
            guard try Frame(serializedBytes: bytes) == frame else { return "Frame(serializedBytes:) differs" }
            let decoder = WireDecoder()
            guard try decoder.decode(Frame.self, from: bytes) == frame else { return "WireDecoder.decode differs" }
            guard try decoder.withFrameView(bytes, { $0.materialize() }) == frame else { return "the view differs" }
            let json = try frame.jsonString()
            guard try Frame(jsonString: json) == frame else { return "JSON differs" }
            guard try ProtoJSON.jsonString(fromBinary: bytes, messageType: Frame.protoMessageName) == json else {
                return "JSON printed from the bytes differs"
            }
        } catch {
            return "\(error)"
        }
        return nil
    }

    @Test("100 merger layers nest 305 levels: maxDepth 305 decodes them, 304 does not, the default 320 does")
    func depthOfOneHundredLayers() throws {
        let bytes = nestedMergerFrame(layers: 100).serializedBytes()
        #expect(throws: Never.self) { try Frame(serializedBytes: bytes, options: DecodingOptions(maxDepth: 305)) }
        let error = #expect(throws: IMCodecError.self) {
            try Frame(serializedBytes: bytes, options: DecodingOptions(maxDepth: 304))
        }
        #expect(error?.code == .tooDeep)
        #expect(DecodingOptions().maxDepth >= 305)
    }

    @Test("a 100-layer merger round-trips inside a Swift Task")
    func inTask() async {
        let result = await Task.detached { Self.roundTrip(nestedMergerFrame(layers: 100)) }.value
        #expect(result == nil)
    }

    #if Tools  // the imcodec tool is built with the Tools trait (Package.swift)
    @Test("a 100-layer merger round-trips on the main thread (the imcodec tool's commands run there)")
    func onMainThread() throws {
        // Swift Testing runs tests off the main thread, so the tool, a synchronous ParsableCommand,
        // decodes and encodes on its process's main thread.
        let frame = nestedMergerFrame(layers: 100)
        let decoded = try CLI.run(["decode"], input: frame.serializedBytes())
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(try Frame(jsonString: decoded.text) == frame)
        let encoded = try CLI.run(["encode"], input: decoded.stdout)
        #expect(encoded.status == 0, "\(encoded.stderr)")
        #expect(encoded.stdout == frame.serializedBytes())
    }
    #endif

    @Test("deep input decodes on a thread with a 256 KiB stack, the deepest the cap allows included")
    func onSmallStack() throws {
        // Values are built, encoded and compared here; only decoding runs on the small stack (it
        // moves the recursive work to a thread with room; encoding a value recurses in the caller).
        for frame in [nestedMergerFrame(layers: 100), nestedMergerFrame(layers: 165)] {
            let bytes = frame.serializedBytes()
            let json = try frame.jsonString()
            let done = DispatchSemaphore(value: 0)
            let results = LockedResults()
            let thread = Thread {
                let decoder = WireDecoder(options: DecodingOptions(maxDepth: 512))
                var jsonOptions = JSONDecodingOptions()
                jsonOptions.maxDepth = 512
                results.append(Result { try Frame(serializedBytes: bytes, options: DecodingOptions(maxDepth: 512)) })
                results.append(Result { try decoder.decode(Frame.self, from: bytes) })
                results.append(Result { try decoder.withFrameView(bytes) { $0.materialize() } })
                results.append(Result { try Frame(jsonString: json, options: jsonOptions) })
                results.append(
                    Result {
                        try Frame(
                            jsonString: ProtoJSON.jsonString(
                                fromBinary: bytes,
                                messageType: Frame.protoMessageName,
                                decoding: DecodingOptions(maxDepth: 512)
                            ),
                            options: jsonOptions
                        )
                    }
                )
                done.signal()
            }
            thread.stackSize = 256 << 10
            thread.start()
            done.wait()
            let values = results.values
            #expect(values.count == 5)
            for (i, value) in values.enumerated() {
                switch value {
                case .success(let decoded): #expect(decoded == frame, "path \(i)")
                case .failure(let error): Issue.record("path \(i): \(error)")
                }
            }
        }
    }
}

/// Results written by one thread and read after it signalled.
private final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Result<Frame, any Error>] = []
    func append(_ value: Result<Frame, any Error>) { lock.withLock { stored.append(value) } }
    var values: [Result<Frame, any Error>] { lock.withLock { stored } }
}
