#if Tools
import NIOCore

/// Runs Swift tasks on a NIO event loop (SE-0417 task executor preference), so that async work the
/// relay starts (checking a login token, whose library is async) runs on the relay's own thread
/// and never waits for a thread of the shared concurrency pool, which other code may keep busy.
/// Actors without an executor of their own, such as jwt-kit's key collection, run there too.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
#endif
