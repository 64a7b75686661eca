internal import CIMCodecRuntime

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the recursive steps of a decode (protobuf-c's unpack, the transcoder, the conversion to
/// Swift values, the JSON printer) where the stack is deep enough for the input's nesting.
///
/// protobuf-c recurses once per nesting level (about 1 KiB of C stack each), and so do the
/// conversions to Swift values. A 100-layer merger, as Tencent allows, nests about 300 levels
/// (``DecodingOptions/maxDepth``), which a thread with a small stack (a Swift concurrency thread, a
/// thread some library made with 512 KiB) cannot afford. So the pipeline measures the stack that
/// is left on the calling thread: when the input is shallow, or the room left covers
/// ``bytesPerLevel`` per level plus ``reserve``, the work runs where it is; otherwise it runs on a
/// new thread whose stack is made that large, and the caller waits for it. Deep input is rare in
/// IM traffic, so the common case costs one comparison.
@usableFromInline
enum DecodeStack {
    /// Stack one nesting level may take in the recursive steps: protobuf-c takes about 1 KiB, the
    /// Swift conversion of a debug build a few KiB more (DepthTests runs 500 levels on a thread
    /// with a 256 KiB stack); four times that in a build with a sanitizer, whose frames are larger.
    static let bytesPerLevel = (16 << 10) * Int(imcodec_stack_scale())

    /// Stack kept free for whatever runs above and below the recursion.
    static let reserve = 256 << 10

    /// Inputs nesting at most this deep run where they are, without measuring (they need less
    /// than any thread's stack: 64 × 16 KiB + 256 KiB = 1.25 MiB is under the 8 MiB of a main
    /// thread, and of what swift-nio and Foundation give their threads; smaller stacks are the
    /// reason for measuring deeper input).
    @usableFromInline static let inlineDepth = 32

    /// Runs `body`, which recurses `depth` levels, on this thread if its stack has room, else on a
    /// thread with a stack of the size it needs.
    @inlinable
    static func run<R>(depth: Int, _ body: () throws(IMCodecError) -> R) throws(IMCodecError) -> R {
        if depth <= inlineDepth { return try body() }
        return try runMeasured(depth: depth, body)
    }

    @usableFromInline
    static func runMeasured<R>(depth: Int, _ body: () throws(IMCodecError) -> R) throws(IMCodecError) -> R {
        let needed = depth.multipliedReportingOverflow(by: bytesPerLevel).partialValue &+ reserve
        if imcodec_stack_bytes_left() >= needed { return try body() }
        var result: Result<R, IMCodecError>?
        let ran = onNewThread(stackSize: needed) { result = Result { () throws(IMCodecError) -> R in try body() } }
        guard ran, let result else {
            throw .outOfMemory(
                "cannot start a thread with a \(needed)-byte stack for input nested \(depth) levels deep"
            )
        }
        return try result.get()
    }

    /// Runs `job` on a new thread with a stack of at least `stackSize` bytes and waits for it.
    /// Returns false when no such thread could be started.
    private static func onNewThread(stackSize: Int, _ job: () -> Void) -> Bool {
        final class Box: @unchecked Sendable {
            // Read only by the new thread, while the caller waits in pthread_join.
            let job: () -> Void
            init(_ job: @escaping () -> Void) { self.job = job }
        }
        return withoutActuallyEscaping(job) { job -> Bool in
            let box = Unmanaged.passRetained(Box(job))
            var attributes = pthread_attr_t()
            guard pthread_attr_init(&attributes) == 0 else {
                box.release()
                return false
            }
            defer { pthread_attr_destroy(&attributes) }
            let page = 1 << 16
            guard pthread_attr_setstacksize(&attributes, (stackSize + page - 1) / page * page) == 0 else {
                box.release()
                return false
            }
            #if canImport(Darwin)
            var thread: pthread_t?
            #else
            var thread = pthread_t()
            #endif
            let started = pthread_create(
                &thread,
                &attributes,
                { context in
                    let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                    box.job()
                    return nil
                },
                box.toOpaque()
            )
            guard started == 0 else {
                box.release()
                return false
            }
            #if canImport(Darwin)
            return pthread_join(thread!, nil) == 0
            #else
            return pthread_join(thread, nil) == 0
            #endif
        }
    }
}
