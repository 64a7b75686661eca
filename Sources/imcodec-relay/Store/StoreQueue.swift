#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CoreMetrics
import NIOCore
import NIOPosix

/// Runs a ``RelayStore``'s work on a thread of its own, in the order the router asks for it, and
/// hands the results back on the router's event loop in that same order (group commit).
///
/// The router adds writes to ``batch`` and queues what must wait for them with
/// ``afterCommit(_:)`` (acks, forwards, answers) or ``read(_:then:)``. At the end of the event
/// loop's current task everything queued so far becomes one job: its batch is committed in one
/// transaction, its reads run after the commit, then its steps run on the loop, in the order they
/// were queued. While a job runs, the next one collects everything that arrives meanwhile, so one
/// commit covers every frame that arrived during the previous one.
///
/// ```
///  event loop:  frame → batch += writes, steps += ack/forward ─┐        ┌─→ steps run in order
///  store thread:                                     commit(batch); reads ─┘
/// ```
///
/// A failed commit is fatal: nothing of the job is acknowledged, ``onFailure`` is called once, and
/// every later request is dropped (the relay stops; clients resend what was not acknowledged).
final class StoreQueue {
    private struct Job {
        var batch = StoreBatch()
        var reads: [(any RelayStore) throws -> Void] = []
        var steps: [() -> Void] = []

        var isEmpty: Bool { batch.isEmpty && reads.isEmpty && steps.isEmpty }
    }

    /// Carries a job (and the store) to the store thread; only that thread touches them while the job runs.
    private struct Handoff: @unchecked Sendable {
        let store: any RelayStore
        let job: Job
    }

    /// Holds a read's result from the store thread until its step runs on the loop.
    private final class Slot<T>: @unchecked Sendable {
        var value: T?
    }

    let store: any RelayStore
    private let eventLoop: any EventLoop
    /// The store's thread (``close()`` stops it once the last commit is done).
    private let pool: NIOThreadPool
    private var pending = Job()
    private var running = false
    private var scheduled = false
    /// Set once a commit failed; nothing more is done.
    private(set) var failed = false
    /// Called once, on the loop, with the reason of the first failed commit or read.
    var onFailure: (String) -> Void = { _ in }
    /// Called on the loop with the batch about to be committed, as it is handed to the store: it
    /// adds what is made once per commit rather than once per change (the router's resend windows).
    var willCommit: (inout StoreBatch) -> Void = { _ in }
    /// Records how long each commit took (the histogram `imcodec_relay_store_commit_duration_seconds`),
    /// on the loop as the commit completes.
    private let commitDuration: CoreMetrics.Timer
    /// The number of commits completed.
    private(set) var commits = 0

    init(store: any RelayStore, eventLoop: any EventLoop, commitDuration: CoreMetrics.Timer) {
        self.store = store
        self.eventLoop = eventLoop
        self.commitDuration = commitDuration
        self.pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    /// The writes of the job being collected.
    ///
    /// Changed in place (`_modify`): `store.batch.messages.append(m)` appends to the pending batch
    /// itself. With a `get`/`set` pair it would copy the whole batch on every append (the getter's
    /// copy shares its arrays with `pending`, so appending copies them), which makes a group commit
    /// cost the event loop time quadratic in the batch's size: the longer a commit takes, the
    /// larger the next batch, the more the loop copies.
    var batch: StoreBatch {
        get { pending.batch }
        _modify {
            defer { schedule() }
            yield &pending.batch
        }
    }

    /// Runs `body` on the loop once everything queued before it is committed (at once when nothing is).
    func afterCommit(_ body: @escaping () -> Void) {
        guard !failed else { return }
        if !running, pending.isEmpty {
            body()
            return
        }
        pending.steps.append(body)
        schedule()
    }

    /// Runs `body` on the loop once everything queued before it is committed and answered: as
    /// ``afterCommit(_:)``, then once more from the loop, behind what the steps run with that commit
    /// queued. A read's step queues its answer as it runs; when the read and a step queued after it
    /// run with one commit, that answer lands behind the step, and a last step (a shutdown's kick,
    /// a drain's `drained`) went out ahead of it. What ends a connection waits with this.
    func afterAnswers(_ body: @escaping () -> Void) {
        afterCommit { [bound = NIOLoopBound((queue: self, body: body), eventLoop: eventLoop)] in
            bound.value.queue.eventLoop.execute { bound.value.queue.afterCommit(bound.value.body) }
        }
    }

    /// Runs `work` on the store thread after everything queued before it is committed, then `then`
    /// on the loop with its result, in order with every other step.
    func read<T>(_ work: @escaping (any RelayStore) throws -> T, then: @escaping (T) -> Void) {
        guard !failed else { return }
        let slot = Slot<T>()
        pending.reads.append { store in slot.value = try work(store) }
        pending.steps.append {
            if let value = slot.value { then(value) }
        }
        schedule()
    }

    /// Closes the store on its thread (``RelayStore/close()``: a PostgreSQL store's connection and
    /// lock), then stops the thread. Called on the loop once nothing more is queued
    /// (``Router/shutDown()`` waits for the last commit), or when the relay could not start.
    func close() -> EventLoopFuture<Void> {
        let handoff = Handoff(store: store, job: Job())
        let (pool, loop) = (pool, eventLoop)
        return pool.runIfActive(eventLoop: loop) { handoff.store.close() }
            .flatMapError { _ in loop.makeSucceededVoidFuture() }
            .flatMap { loop.makeFutureWithTask { try? await pool.shutdownGracefully() } }
    }

    private func schedule() {
        guard !scheduled, !running else { return }
        scheduled = true
        let queue = NIOLoopBound(self, eventLoop: eventLoop)
        eventLoop.execute {
            queue.value.scheduled = false
            queue.value.start()
        }
    }

    private func start() {
        guard !running, !failed, !pending.isEmpty else { return }
        willCommit(&pending.batch)
        let job = pending
        pending = Job()
        running = true
        let handoff = Handoff(store: store, job: job)
        pool.runIfActive(eventLoop: eventLoop) { () throws -> UInt64 in
            var start = timespec()
            clock_gettime(CLOCK_MONOTONIC, &start)
            try handoff.store.commit(handoff.job.batch)
            var end = timespec()
            clock_gettime(CLOCK_MONOTONIC, &end)
            for read in handoff.job.reads { try read(handoff.store) }
            return UInt64((end.tv_sec - start.tv_sec) * 1_000_000_000 + (end.tv_nsec - start.tv_nsec))
        }.whenComplete { [bound = NIOLoopBound((queue: self, steps: job.steps), eventLoop: eventLoop)] result in
            let queue = bound.value.queue
            queue.running = false
            switch result {
            case .success(let nanoseconds):
                queue.commits += 1
                queue.commitDuration.recordNanoseconds(Int64(nanoseconds))
                for step in bound.value.steps { step() }
                queue.start()
            case .failure(let error):
                queue.failed = true
                queue.pending = Job()
                queue.onFailure("the store failed: \(error)")
            }
        }
    }
}
#endif
