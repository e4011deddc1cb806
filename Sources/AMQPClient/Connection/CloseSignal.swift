import Synchronization

/// Resolves once, when a connection ends, and wakes everyone waiting for that.
final class CloseSignal: Sendable {
    private struct State {
        var outcome: AMQPError??
        var waiters: [CheckedContinuation<AMQPError?, Never>] = []
    }

    private let state = Mutex(State())

    init() {}

    /// Records how the connection ended (nil: closed by the application). Only the first call counts.
    func resolve(_ error: AMQPError?) {
        let waiters = state.withLock { state -> [CheckedContinuation<AMQPError?, Never>] in
            guard state.outcome == nil else { return [] }
            state.outcome = .some(error)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: error) }
    }

    /// True once resolved.
    var isResolved: Bool { state.withLock { $0.outcome != nil } }

    /// Waits until resolved and returns the reason.
    func wait() async -> AMQPError? {
        await withCheckedContinuation { continuation in
            let outcome = state.withLock { state -> AMQPError?? in
                if let outcome = state.outcome { return outcome }
                state.waiters.append(continuation)
                return nil
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
    }
}
