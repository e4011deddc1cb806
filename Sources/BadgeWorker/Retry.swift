import BadgeStore
import Logging

/// Retrying in place: a transient failure (database restarting, lock conflict) is tried again with capped
/// exponential backoff, holding the deliveries unacked, instead of requeueing them behind later events.
enum Retry {
    static func transient<T: Sendable>(
        _ what: String,
        logger: Logger,
        _ body: () async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as StoreError where error.transient {
                attempt += 1
                let delayMilliseconds = min(2000, 25 << min(attempt, 7))
                logger.warning(
                    "transient failure, retrying in place",
                    metadata: [
                        "worker.operation": "\(what)", "worker.attempt": "\(attempt)",
                        "worker.error": "\(error.message)",
                    ])
                try await Task.sleep(for: .milliseconds(delayMilliseconds))
            }
        }
    }
}
