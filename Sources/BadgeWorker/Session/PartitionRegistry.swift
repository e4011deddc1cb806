import Synchronization

/// What the partitions of a session report back to its manager loop (which ones stopped, and the first failure),
/// and the doorbells of their delivery loops, by partition, for wake-ups from elsewhere (another partition's
/// look-ahead, or another worker through the database, see `PipelineStore.listenForOutbox`).
final class PartitionRegistry: Sendable {
    private struct State {
        var stopped: [Int] = []
        var failure: (any Error)?
        var doorbells: [Int: Doorbell] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// A partition started; `doorbell` wakes its delivery loop.
    func started(_ partition: Int, doorbell: Doorbell) {
        state.withLock { $0.doorbells[partition] = doorbell }
    }

    /// A partition's ingestion stage ended and its channel is closed.
    func stopped(_ partition: Int) {
        state.withLock { state in
            state.stopped.append(partition)
            state.doorbells[partition] = nil
        }
    }

    /// Wakes the delivery loops of those of `partitions` that run here.
    func ring(_ partitions: some Sequence<Int>) {
        let doorbells = state.withLock { state in partitions.compactMap { state.doorbells[$0] } }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// Wakes the delivery loop of every partition that runs here.
    func ringAll() {
        for doorbell in state.withLock({ Array($0.doorbells.values) }) { doorbell.ring() }
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
