import BadgeStore
import Foundation
import Logging
import Testing

@testable import BadgeWorker

/// Retrying in place (`Retry.transient`): which failures are tried again, and the caller's refinement of them.
@Suite("Retry in place")
struct RetryTests {
    static let logger = Logger(label: "retry-test")

    /// An attempt that outlasts its time limit fails with a transient `timeout`, which the caller's refinement sees
    /// like any store failure: turned into one that is not retried, it ends the call at the first attempt (an
    /// ingestion transaction of several events is then applied in halves instead of again and again).
    @Test func theAttemptsOwnTimeLimitReachesTheRefinement() async throws {
        let attempts = Counter()
        await #expect {
            try await Retry.transient(
                "apply", attemptTimeout: .milliseconds(20), logger: Self.logger,
                refining: { error in
                    error.ranOutOfTime ? StoreError(code: .batchTooLong, message: "\(error)", failure: .other) : error
                }
            ) {
                attempts.add()
                try await Task.sleep(for: .seconds(10))
            }
        } throws: { error in
            (error as? StoreError)?.code == .batchTooLong
        }
        #expect(attempts.value == 1)
    }

    /// Without a refinement, the same timeout is retried in place until an attempt succeeds.
    @Test func aTimeoutIsRetriedInPlaceWithoutARefinement() async throws {
        let attempts = Counter()
        let value = try await Retry.transient("apply", attemptTimeout: .milliseconds(20), logger: Self.logger) {
            attempts.add()
            if attempts.value < 3 { try await Task.sleep(for: .seconds(10)) }
            return 7
        }
        #expect(value == 7)
        #expect(attempts.value == 3)
    }
}

/// A count shared with a `@Sendable` closure.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }

    func add() { lock.withLock { count += 1 } }
}
