import Synchronization

/// Set once on graceful shutdown; the manager loop sleeps on it in short steps, so shutdown does not wait out a
/// lease round.
final class ShutdownFlag: Sendable {
    private let flag = Mutex(false)

    init() {}

    var isSet: Bool { flag.withLock { $0 } }

    func set() {
        flag.withLock { $0 = true }
    }

    /// Returns when the flag is set (within 20 ms) or after `duration`, whichever comes first.
    func wait(upTo duration: Duration) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + duration
        while !isSet, clock.now < deadline {
            try await Task.sleep(for: min(.milliseconds(20), deadline - clock.now))
        }
    }
}
