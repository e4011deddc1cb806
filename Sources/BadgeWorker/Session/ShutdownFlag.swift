import Synchronization

/// Set once on graceful shutdown (which also rings the manager loop's wake-up doorbell): the loop ends at its next
/// turn.
final class ShutdownFlag: Sendable {
    private let flag = Mutex(false)

    init() {}

    var isSet: Bool { flag.withLock { $0 } }

    func set() {
        flag.withLock { $0 = true }
    }
}
