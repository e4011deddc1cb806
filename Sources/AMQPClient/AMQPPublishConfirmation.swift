import Synchronization

/// The outcome of a message handed over with `AMQPChannel.publishInOrder`, resolved by the broker's confirm.
public final class AMQPPublishConfirmation: Sendable {
    private struct State {
        var result: Result<Void, any Error>?
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }

    private let state = Mutex(State())

    init() {}

    func resolve(_ result: Result<Void, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard state.result == nil else { return [] }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// True once the broker answered (or the connection ended).
    public var isResolved: Bool { state.withLock { $0.result != nil } }

    /// Waits for the outcome: returns when the broker confirmed, throws `AMQPError` otherwise.
    public func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let result = state.withLock { state -> Result<Void, any Error>? in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
