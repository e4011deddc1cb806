import Synchronization

/// Wakes a partition's delivery loop: rung when ingestion committed new pushes for it to claim (and by wake-ups from
/// other partitions and, through `LISTEN`, other workers), closed when the partition stops. One waiter at a time.
///
/// Each ring also counts (``rings``): a loop that notes the count before it claims can wait for a ring that came
/// after (``wait(upTo:ringsSeen:)``), so a ring for pushes its claim already took does not make it claim again.
///
/// Not an `AsyncStream`: a wait has a limit (the next retry's due time), and a limit means ending the wait from
/// outside it. An `AsyncStream` ends for good when a task waiting in `next()` is cancelled, and
/// swift-async-algorithms' `AsyncChannel` makes the ringer wait for the loop (`ring()` is called from lease rounds,
/// other partitions and `LISTEN` notifications, none of which may wait). So: a lock, a count and one continuation.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var rings = 0
        var closed = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var lastWait = 0
        /// A wait that timed out before its continuation was registered: that one resumes at once.
        var abandoned = 0
    }

    private let state = Mutex(State())
    /// The clock a wait's limit is timed on (a test's own, or the continuous clock).
    private let now: @Sendable () -> ContinuousClock.Instant
    private let sleep: @Sendable (ContinuousClock.Instant) async throws -> Void

    init<C: Clock>(clock: C = ContinuousClock()) where C.Instant == ContinuousClock.Instant {
        self.now = { clock.now }
        self.sleep = { try await clock.sleep(until: $0, tolerance: nil) }
    }

    /// There may be something to deliver.
    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.rung = true
            state.rings += 1
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume()
    }

    /// The partition stops: the loop finishes its round in progress and ends.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        waiter?.resume()
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// How many times it has been rung so far.
    var rings: Int { state.withLock { $0.rings } }

    /// Returns when rung (at once if it was rung since the last wait), when closed, or after `limit` (nil: no
    /// limit).
    func wait(upTo limit: Duration?) async {
        await wait(upTo: limit, ringsSeen: nil)
    }

    /// Returns when rung after it had been rung `ringsSeen` times in all (at once if it already was), when closed,
    /// or after `limit` (nil: no limit). Rings up to `ringsSeen` are spent.
    ///
    /// Only these end a wait: not the task's cancellation. The loops that wait here end when their doorbell closes
    /// (a delivery loop after recording its round), and a wait that ended on cancellation would return at once
    /// every time: the loop would spin until then. A caller that should stop on cancellation rings the doorbell
    /// from a cancellation handler and looks at `Task.isCancelled`.
    func wait(upTo limit: Duration?, ringsSeen: Int?) async {
        let id = state.withLock { state -> Int in
            state.lastWait += 1
            return state.lastWait
        }
        guard let limit else {
            await withCheckedContinuation { continuation in register(continuation, id: id, ringsSeen: ringsSeen) }
            return
        }
        let deadline = now() + limit
        await withTaskGroup(of: WaitEnd.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    self.register(continuation, id: id, ringsSeen: ringsSeen)
                }
                return .ended
            }
            group.addTask {
                try? await self.sleep(deadline)
                return .limit
            }
            let first = await group.next()
            if first == .limit, Task.isCancelled, now() < deadline {
                // The sleep ended on the task's cancellation, not at the limit: the rest of the limit is timed by a
                // task of its own, which the cancellation does not reach. Only a cancelled task pays for one.
                let timer = Task { [self] in
                    do { try await sleep(deadline) } catch { return }
                    abandon(id)
                }
                _ = await group.next()
                timer.cancel()
                return
            }
            // Whichever ended first, make sure the other ends too.
            abandon(id)
            group.cancelAll()
        }
    }

    /// Which of a limited wait's two children ended it.
    private enum WaitEnd: Sendable {
        case ended
        case limit
    }

    /// As ``wait(upTo:ringsSeen:)``, and if the task is cancelled (before or during the wait), rings: for a loop
    /// that ends on its task's cancellation and looks at `Task.isCancelled` after each wait.
    func wait(upTo limit: Duration?, ringsSeen: Int? = nil, ringOnCancel: Bool) async {
        guard ringOnCancel else { return await wait(upTo: limit, ringsSeen: ringsSeen) }
        await withTaskCancellationHandler {
            await wait(upTo: limit, ringsSeen: ringsSeen)
        } onCancel: {
            ring()
        }
    }

    /// Ends the wait `id`: resumes its continuation if it is the waiter, or makes it resume at once when it
    /// registers.
    private func abandon(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter, waiter.id == id {
                state.waiter = nil
                return waiter.continuation
            }
            state.abandoned = max(state.abandoned, id)
            return nil
        }
        waiter?.resume()
    }

    /// Resumes `continuation` at once when the wait `id` is over already (rung, closed or abandoned), else makes it
    /// the waiter.
    private func register(_ continuation: CheckedContinuation<Void, Never>, id: Int, ringsSeen: Int?) {
        let resumeNow = state.withLock { state -> Bool in
            let rung = ringsSeen.map { state.rings > $0 } ?? state.rung
            if rung || state.closed || state.abandoned == id {
                state.rung = false
                return true
            }
            state.waiter = (id, continuation)
            return false
        }
        if resumeNow { continuation.resume() }
    }
}
