import Synchronization

/// What the partitions of a session report back to its manager loop: which ones stopped, and the first failure.
final class PartitionRegistry: Sendable {
    private struct State {
        var stopped: [Int] = []
        var failure: (any Error)?
    }

    private let state = Mutex(State())

    init() {}

    /// A partition's processor ended and its channel is closed.
    func stopped(_ partition: Int) {
        state.withLock { $0.stopped.append(partition) }
    }

    /// Something failed that ends the session (connection lost, database unusable).
    func fail(_ error: any Error) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
    }

    /// Takes the partitions that stopped since the last call.
    func takeStopped() -> [Int] {
        state.withLock { state in
            defer { state.stopped = [] }
            return state.stopped
        }
    }

    var failure: (any Error)? { state.withLock { $0.failure } }
}
