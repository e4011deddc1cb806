import Foundation
import Logging
import Synchronization

/// A last line of defence against a wedged dependency: a dedicated thread (not the cooperative pool) that ends the
/// process when a batch or the lease loop makes no progress for `limit`.
///
/// A worker is crash-only by design: everything it has not committed is unacked and returns to its queue, its
/// leases expire, and its outbox is sent by the next owner. So when a call into a client library never returns
/// (a pooled PostgreSQL connection requested while the server restarts, say), exiting and letting the supervisor
/// (systemd, docker `restart: always`, `scripts/fleet`) start a fresh process is the bounded, safe way out. Exit
/// status 75 (EX_TEMPFAIL) says so.
final class Watchdog: Sendable {
    private struct State {
        /// Work that started and has not finished: name → start time.
        var busy: [String: ContinuousClock.Instant] = [:]
        /// Whether the database is known to be unable to write (see ``Watchdog/pause()``).
        var paused = false
    }

    private let state = Mutex(State())
    private let limit: Duration
    private let logger: Logger

    init(limit: Duration, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    /// Starts the watching thread (once per process).
    func start() {
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 1)
                let now = ContinuousClock.now
                let stuck = state.withLock { state in
                    state.paused ? nil : state.busy.first { now - $0.value > limit }
                }
                if let (name, since) = stuck {
                    logger.critical(
                        "no progress, exiting so that the supervisor restarts the worker",
                        metadata: ["worker.stuck": "\(name)", "worker.stuck_for": "\(now - since)"])
                    exit(75)
                }
            }
        }
        thread.name = "badgepipe-watchdog"
        thread.start()
    }

    /// The operation that has been running longest, and for how long, against the limit.
    func longestBusy() -> (name: String, for: Duration, limit: Duration)? {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.busy.min { $0.value < $1.value }.map { ($0.key, now - $0.value, limit) }
        }
    }

    /// An operation watched under `name` made progress (a batch committed one of its transactions): its time
    /// starts again.
    func progressed(_ name: String) {
        state.withLock { state in
            if state.busy[name] != nil { state.busy[name] = ContinuousClock.now }
        }
    }

    /// The database cannot write now: the watched work waits for it, retrying with a backoff whose every attempt
    /// is bounded by its own time limit, so waiting is not a wedge. Until ``resume()`` nothing is judged stuck.
    func pause() {
        state.withLock { $0.paused = true }
    }

    /// The database writes again: every watched operation's time starts again from now.
    func resume() {
        let now = ContinuousClock.now
        state.withLock { state in
            state.paused = false
            for name in state.busy.keys { state.busy[name] = now }
        }
    }

    /// Runs `body`, watched under `name`.
    func watch<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        state.withLock { $0.busy[name] = ContinuousClock.now }
        defer { state.withLock { _ = $0.busy.removeValue(forKey: name) } }
        return try await body()
    }
}

extension Optional where Wrapped == Watchdog {
    /// Runs `body` watched under `name` when there is a watchdog, unwatched otherwise.
    func watch<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        guard let watchdog = self else { return try await body() }
        return try await watchdog.watch(name, body)
    }
}
