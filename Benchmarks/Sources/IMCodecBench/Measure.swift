import CAllocationCounter
import Foundation

/// Monotonic nanoseconds.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Keeps results alive so the optimiser cannot drop the work that made them.
nonisolated(unsafe) var blackHole: UInt64 = 0

@inline(never)
func consume(_ value: UInt64) { blackHole &+= value }

/// One measured path over one corpus.
struct Measurement {
    let path: String
    /// Median over the repetitions.
    let nsPerMsg: Double
    let mbPerS: Double
    let mallocsPerMsg: Double
    /// Every repetition's ns/msg, to show the spread.
    let samples: [Double]

    var spread: Double {
        guard let lo = samples.min(), let hi = samples.max(), nsPerMsg > 0 else { return 0 }
        return (hi - lo) / nsPerMsg
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// How long and how often to measure.
struct MeasureSettings {
    /// Repetitions per path; the table shows their median.
    var repetitions = 11
    /// Each repetition runs whole passes over the corpus for at least this long.
    var minSecondsPerRepetition = 0.2
    /// Warm-up before the first repetition.
    var warmUpSeconds = 0.2
}

/// One measured path: sized by a warm-up, then timed one repetition at a time. The harness runs
/// the repetitions of all paths round-robin (path 1, path 2, ..., path 1, ...), so a change in the
/// machine's load during the run touches every path alike and the ratios stay meaningful.
final class Benchmark {
    let path: String
    let corpus: Corpus
    private let warmUpAndSize: () -> Void
    private let repetition: () -> (nsPerMsg: Double, mallocsPerMsg: Double)
    private(set) var times: [Double] = []
    private(set) var mallocs: [Double] = []

    init(
        path: String,
        corpus: Corpus,
        warmUpAndSize: @escaping () -> Void,
        repetition: @escaping () -> (nsPerMsg: Double, mallocsPerMsg: Double)
    ) {
        self.path = path
        self.corpus = corpus
        self.warmUpAndSize = warmUpAndSize
        self.repetition = repetition
    }

    func warmUp() { warmUpAndSize() }

    func runRepetition() {
        let r = repetition()
        times.append(r.nsPerMsg)
        mallocs.append(r.mallocsPerMsg)
    }

    var measurement: Measurement {
        let ns = median(times)
        return Measurement(
            path: path,
            nsPerMsg: ns,
            mbPerS: corpus.meanBytes / ns * 1e3,
            mallocsPerMsg: median(mallocs),
            samples: times
        )
    }
}

/// Runs `pass` for at least `warmUpSeconds` (and 2 passes) and returns how many passes make one
/// repetition of at least `minSecondsPerRepetition`.
private func sizeRepetition(_ settings: MeasureSettings, _ pass: () -> UInt64) -> Int {
    var passes = 0
    let start = monotonicNanoseconds()
    repeat {
        consume(pass())
        passes += 1
    } while Double(monotonicNanoseconds() - start) < settings.warmUpSeconds * 1e9 || passes < 2
    let perPass = Double(monotonicNanoseconds() - start) / Double(passes)
    return max(1, Int((settings.minSecondsPerRepetition * 1e9 / perPass).rounded(.up)))
}

/// A path that runs `pass` (one pass over the corpus, returning a checksum) on the calling thread.
/// Each repetition is one untimed pass (to bring the path's code and data back into the caches
/// after the other paths ran), then whole passes timed together, with the thread's mallocs counted.
func singleThreaded(
    _ path: String,
    corpus: Corpus,
    settings: MeasureSettings,
    _ pass: @escaping () -> UInt64
)
    -> Benchmark
{
    var passesPerRep = 1
    return Benchmark(
        path: path,
        corpus: corpus,
        warmUpAndSize: { passesPerRep = sizeRepetition(settings, pass) },
        repetition: {
            consume(pass())
            let m0 = allocation_counter_thread_calls()
            let t0 = monotonicNanoseconds()
            var sum: UInt64 = 0
            for _ in 0..<passesPerRep { sum &+= pass() }
            let t1 = monotonicNanoseconds()
            let m1 = allocation_counter_thread_calls()
            consume(sum)
            let messages = Double(passesPerRep * corpus.count)
            return (Double(t1 - t0) / messages, Double(m1 - m0) / messages)
        }
    )
}

/// A path that runs on `threads` threads at once, each over the whole corpus with its own state
/// (`makeWorker` runs on the thread that uses it). A repetition reports wall time per message: the
/// time from releasing all threads together until the last one finishes, divided by all the
/// messages they handled; and the mallocs of all threads per message.
func multiThreaded(
    _ path: String,
    threads: Int,
    corpus: Corpus,
    settings: MeasureSettings,
    makeWorker: @escaping @Sendable () -> (() -> UInt64)
) -> Benchmark {
    final class Box: @unchecked Sendable {
        var passesPerRep = 1
        // One slot per thread, written only by that thread (no shared Array to copy on write).
        let mallocs: UnsafeMutableBufferPointer<UInt64>
        let sums: UnsafeMutableBufferPointer<UInt64>
        let ready = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        init(threads: Int) {
            mallocs = .allocate(capacity: threads)
            mallocs.initialize(repeating: 0)
            sums = .allocate(capacity: threads)
            sums.initialize(repeating: 0)
        }
        deinit {
            mallocs.deallocate()
            sums.deallocate()
        }
    }
    var passesPerRep = 1
    return Benchmark(
        path: path,
        corpus: corpus,
        warmUpAndSize: {
            // Size the repetitions on one thread (each thread then does that much work).
            passesPerRep = sizeRepetition(settings, makeWorker())
        },
        repetition: {
            let box = Box(threads: threads)
            box.passesPerRep = passesPerRep
            for index in 0..<threads {
                let thread = Thread {
                    let work = makeWorker()
                    var sum = work()  // warm this thread's decoder and caches
                    box.ready.signal()
                    box.go.wait()
                    let m0 = allocation_counter_thread_calls()
                    for _ in 0..<box.passesPerRep { sum &+= work() }
                    box.mallocs[index] = allocation_counter_thread_calls() - m0
                    box.sums[index] = sum
                    box.done.signal()
                }
                thread.stackSize = 8 << 20
                thread.start()
            }
            for _ in 0..<threads { box.ready.wait() }
            let t0 = monotonicNanoseconds()
            for _ in 0..<threads { box.go.signal() }
            for _ in 0..<threads { box.done.wait() }
            let t1 = monotonicNanoseconds()
            consume(box.sums.reduce(0, &+))
            let messages = Double(passesPerRep * corpus.count * threads)
            return (Double(t1 - t0) / messages, Double(box.mallocs.reduce(0, +)) / messages)
        }
    )
}
