import AMQPClient
import Synchronization

/// Collects one consumer's messages so that a batch can take everything that arrived until its partition's
/// ingestion tick (see `TransactionGroupStateMachine`): natural batching, bounded by the channel's prefetch.
///
/// Not an `AsyncStream`: a batch takes everything that waits without waiting (``takeAvailable(limit:)``), which an
/// `AsyncStream` cannot do (it hands out one element per `next()`, and every `next()` may suspend), and the
/// consumer's callback runs on the broker connection's own thread, which must never wait. So: a lock, an array and
/// one continuation for the ingestion loop's wait.
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

    /// Messages waiting.
    var count: Int { state.withLock { $0.messages.count } }

    /// Waits until a message is there or the buffer is finished.
    func waitForMessages() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.finished != nil || !state.messages.isEmpty { return true }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Takes up to `limit` of the messages there, without waiting (empty when there are none); nil once finished
    /// (throws its error, if any).
    func takeAvailable(limit: Int) throws -> [AMQPMessage]? {
        let step = state.withLock { state -> Result<[AMQPMessage], any Error>? in
            if let finished = state.finished { return finished.map { .failure($0) } }
            let count = min(limit, state.messages.count)
            let batch = Array(state.messages.prefix(count))
            state.messages.removeFirst(count)
            return .success(batch)
        }
        return try step?.get()
    }
}
