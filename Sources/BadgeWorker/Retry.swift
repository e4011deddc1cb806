import BadgeStore
import BadgeSupport
import Logging

/// Retrying in place: a transient failure (database restarting, lock conflict) is tried again with capped
/// exponential backoff, holding the deliveries unacked, instead of requeueing them behind later events.
enum Retry {
    /// The waits between attempts: full jitter below a ceiling of 50 ms doubling up to 2 s.
    static let backoff = Backoff(initial: .milliseconds(50), maximum: .seconds(2))

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
                    do {
                        value = try await withTimeLimit(attemptTimeout, body)
                    } catch let timeout as TimeLimitError {
                        // Running out of time is transient: the attempt is retried like a lost connection.
                        throw StoreError(
                            code: .timeout, message: "\(what) took longer than \(timeout.limit)", transient: true)
                    }
                } else {
                    value = try await body()
                }
                health?.databaseAnswered()
                return value
            } catch let error as StoreError where error.transient {
                health?.databaseFailed("\(what): \(error.message)")
                WorkerMetrics.databaseErrors(error).increment()
                attempt += 1
                logger.warning(
                    dependency.map { "waiting for \($0), retrying" } ?? "transient failure, retrying in place",
                    metadata: [
                        "worker.operation": "\(what)", "worker.attempt": "\(attempt)",
                        "worker.error": "\(error.message)",
                    ])
                try await Task.sleep(for: backoff.delay(attempt: attempt))
            }
        }
    }
}
