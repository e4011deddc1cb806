import Synchronization

/// A clock that moves only when the test moves it (``advance(by:)``): a unit that depends on time is tested without
/// waiting for time. Its instants are the continuous clock's, so it stands in wherever code takes a clock whose
/// `Instant` is `ContinuousClock.Instant`.
///
/// A test sees who sleeps on it (``sleepers``) before it moves it, so that it moves the clock past a deadline that
/// was set, not one that is about to be.
public final class ManualClock: Clock, Sendable {
    public typealias Instant = ContinuousClock.Instant

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Instant
        var sleepers: [Sleeper] = []
        var lastID = 0
        /// Sleeps cancelled before they were registered: they end as they start.
        var cancelledEarly: Set<Int> = []
    }

    private let state: Mutex<State>

    /// A clock that reads the continuous clock's now until it is moved.
    public init() {
        state = Mutex(State(now: ContinuousClock.now))
    }

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .zero }

    /// How many sleeps wait for the clock to move.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Returns once the clock has been moved to `deadline` or past it; throws `CancellationError` when the task is
    /// cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> Int in
            state.lastID += 1
            return state.lastID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ended: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let ended { continuation.resume(with: ended) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let index = state.sleepers.firstIndex(where: { $0.id == id }) {
                    return state.sleepers.remove(at: index)
                }
                // Not registered yet, or ended already (then the id is never looked up again).
                state.cancelledEarly.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration`; the sleeps whose deadline it reaches end.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
