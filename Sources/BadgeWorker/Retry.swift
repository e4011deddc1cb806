import BadgeStore
import Logging

/// Retrying in place: a transient failure (database restarting, lock conflict) is tried again with capped
/// exponential backoff, holding the deliveries unacked, instead of requeueing them behind later events.
enum Retry {
    /// How long one attempt may take before it is cancelled and retried. It helps only a call that honours
    /// cancellation; one that does not (see `PostgresExecutor.queryIfOpen` for the case we met) is left to the
    /// watchdog.
    static let attemptTimeout: Duration = .seconds(10)

    /// Runs `body` until it succeeds or fails with a non-transient error. `waitingFor`, when given, names the
    /// dependency the retries wait for, in the log line of every retry (e.g. "the database" at start). `health`
    /// hears whether the database answered.
    static func transient<T: Sendable>(
        _ what: String,
        waitingFor dependency: String? = nil,
        health: WorkerHealth? = nil,
        attemptTimeout: Duration? = Retry.attemptTimeout,
        logger: Logger,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                let value: T
                if let attemptTimeout {
                    value = try await withTimeout(attemptTimeout, what: what, body)
                } else {
                    value = try await body()
                }
                health?.databaseAnswered()
                return value
            } catch let error as StoreError where error.transient {
                health?.databaseFailed("\(what): \(error.message)")
                WorkerMetrics.databaseErrors(error).increment()
                attempt += 1
                let delayMilliseconds = min(2000, 25 << min(attempt, 7))
                logger.warning(
                    dependency.map { "waiting for \($0), retrying" } ?? "transient failure, retrying in place",
                    metadata: [
                        "worker.operation": "\(what)", "worker.attempt": "\(attempt)",
                        "worker.error": "\(error.message)",
                    ])
                try await Task.sleep(for: .milliseconds(delayMilliseconds))
            }
        }
    }

    /// Runs `body`, cancelling it and throwing a transient `StoreError` when it takes longer than `limit`.
    static func withTimeout<T: Sendable>(
        _ limit: Duration,
        what: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw StoreError(code: .timeout, message: "\(what) took longer than \(limit)", transient: true)
            }
            return value
        }
    }
}
