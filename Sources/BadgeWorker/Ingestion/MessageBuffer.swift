import AMQPClient
import Synchronization

/// Collects one consumer's messages so that a batch can take everything that arrived while the previous batch
/// was being processed: natural batching, bounded by the channel's prefetch.
final class MessageBuffer: Sendable {
    private struct State {
        var messages: [AMQPMessage] = []
        var finished: (any Error)?? = nil
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    init() {}

    /// Adds a message (consumer side).
    func append(_ message: AMQPMessage) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.messages.append(message)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// No more messages will come; `error` is nil for a clean end.
    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.finished == nil { state.finished = .some(error) }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits for at least one message and takes up to `limit`; returns nil once finished (throws its error, if
    /// any).
    func take(limit: Int) async throws -> [AMQPMessage]? {
        while true {
            enum Step {
                case batch([AMQPMessage])
                case end((any Error)?)
                case wait
            }
            let step = state.withLock { state -> Step in
                if let finished = state.finished { return .end(finished) }
                if !state.messages.isEmpty {
                    let count = min(limit, state.messages.count)
                    let batch = Array(state.messages.prefix(count))
                    state.messages.removeFirst(count)
                    return .batch(batch)
                }
                return .wait
            }
            switch step {
            case .batch(let batch): return batch
            case .end(let error):
                if let error { throw error }
                return nil
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.finished != nil || !state.messages.isEmpty { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }
}
