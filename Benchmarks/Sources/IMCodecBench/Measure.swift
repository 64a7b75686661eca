import Foundation
import MallocCounter

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
    var repetitions = 7
    /// Each repetition runs whole passes over the corpus for at least this long.
    var minSecondsPerRepetition = 0.25
    /// Warm-up before the first repetition.
    var warmUpSeconds = 0.2
}

/// Runs `pass` (one pass over the corpus, returning a checksum) the way MeasureSettings says:
/// warm-up, then `repetitions` timed runs of whole passes; ns/msg and mallocs/msg are medians.
func measure(
    _ path: String, corpus: Corpus, settings: MeasureSettings, _ pass: () -> UInt64
) -> Measurement {
    // Warm up (caches, branch predictors, lazily initialised runtime state) and size the repetitions.
    var passes = 0
    let warmStart = monotonicNanoseconds()
    repeat {
        consume(pass())
        passes += 1
    } while Double(monotonicNanoseconds() - warmStart) < settings.warmUpSeconds * 1e9 || passes < 2
    let perPass = Double(monotonicNanoseconds() - warmStart) / Double(passes)
    let passesPerRep = max(1, Int((settings.minSecondsPerRepetition * 1e9 / perPass).rounded(.up)))

    var times: [Double] = []
    var mallocs: [Double] = []
    let messages = Double(passesPerRep * corpus.count)
    for _ in 0..<settings.repetitions {
        let m0 = malloc_counter_thread_count()
        let t0 = monotonicNanoseconds()
        var sum: UInt64 = 0
        for _ in 0..<passesPerRep { sum &+= pass() }
        let t1 = monotonicNanoseconds()
        let m1 = malloc_counter_thread_count()
        consume(sum)
        times.append(Double(t1 - t0) / messages)
        mallocs.append(Double(m1 - m0) / messages)
    }
    let ns = median(times)
    return Measurement(
        path: path, nsPerMsg: ns, mbPerS: corpus.meanBytes / ns * 1e3, mallocsPerMsg: median(mallocs), samples: times)
}

/// Runs `work` on `threads` threads at once, each over the whole corpus with its own state
/// (`makeWorker` runs on the thread that uses it), and reports wall time per message: the time
/// from releasing all threads together until the last one finishes, divided by all the messages
/// they handled.
func measureThreads(
    _ path: String, threads: Int, corpus: Corpus, settings: MeasureSettings,
    makeWorker: @escaping @Sendable () -> (() -> UInt64)
) -> Measurement {
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

    // Size the repetitions on one thread first.
    let probe = makeWorker()
    var passes = 0
    let warmStart = monotonicNanoseconds()
    repeat {
        consume(probe())
        passes += 1
    } while Double(monotonicNanoseconds() - warmStart) < settings.warmUpSeconds * 1e9 || passes < 2
    let perPass = Double(monotonicNanoseconds() - warmStart) / Double(passes)
    let passesPerRep = max(1, Int((settings.minSecondsPerRepetition * 1e9 / perPass).rounded(.up)))

    var times: [Double] = []
    var mallocs: [Double] = []
    let messages = Double(passesPerRep * corpus.count * threads)
    for _ in 0..<settings.repetitions {
        let box = Box(threads: threads)
        box.passesPerRep = passesPerRep
        for index in 0..<threads {
            let thread = Thread {
                let work = makeWorker()
                var sum = work()  // warm this thread's decoder and caches
                box.ready.signal()
                box.go.wait()
                let m0 = malloc_counter_thread_count()
                for _ in 0..<box.passesPerRep { sum &+= work() }
                box.mallocs[index] = malloc_counter_thread_count() - m0
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
        times.append(Double(t1 - t0) / messages)
        mallocs.append(Double(box.mallocs.reduce(0, +)) / messages)
    }
    let ns = median(times)
    return Measurement(
        path: path, nsPerMsg: ns, mbPerS: corpus.meanBytes / ns * 1e3, mallocsPerMsg: median(mallocs), samples: times)
}
