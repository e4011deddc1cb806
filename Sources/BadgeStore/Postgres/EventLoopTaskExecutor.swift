import NIOCore

/// Runs a task's jobs on one NIO event loop: a transaction's code runs on the thread of the connection it talks
/// to (see `PostgresTransactor`).
///
/// Why: on the cooperative pool, every statement crosses threads twice, to the connection's event loop to be
/// written (an `eventfd` wake-up) and back to the pool when its answer comes (a `futex` wake-up), and on a machine
/// of few cores those context switches weigh heavily in a worker's CPU. On the connection's own loop, writing a
/// statement, reading its answer and resuming the transaction after it are steps of one thread, and the loop only
/// sleeps in `epoll` while the database works. The code between two statements is short (building and reading row
/// sets), so the loop is not held up for long.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
