import BadgeStore
import BadgeSupport
import Logging

/// Retrying in place: a failure that the same work may get past (``DatabaseFailure/isRetried``) is tried again,
/// holding the deliveries unacked, instead of requeueing them behind later events or restarting the session (each
/// return of an unacked message counts toward the queue's delivery limit).
///
/// - ``DatabaseFailure/connection`` (a lost connection, a deadlock, a timeout): again at once, with a short
///   backoff (`Backoff.storeConnectionFailure`); each retry is logged.
/// - ``DatabaseFailure/unavailable`` (read-only, disk full, out of resources, shutting down): the database cannot
///   write now, and may not for minutes. The work waits with a capped backoff (`Backoff.storeUnavailable`, at most its
///   maximum between tries); the worker reports unready (`/readyz` says why), its watchdog
///   does not count the wait as a wedge, and the state is logged once when it begins and once when it ends
///   (``DatabaseOutage``, kept by ``WorkerHealth``), not per attempt.
/// - ``DatabaseFailure/connection`` failures that go on for ``unreachableAfter`` (PostgreSQL stopped, so every
///   connection is refused; a host that does not answer, so every attempt times out) mean the same as
///   ``DatabaseFailure/unavailable``: the database cannot write now. From then on the work waits as above, however
///   long the outage lasts, instead of exhausting the watchdog's patience with quick retries.
enum Retry {
    /// How long one attempt may take before it is cancelled and retried. It helps only a call that honours
    /// cancellation; one that does not (see `PostgresExecutor.queryIfOpen` for such a case) is left to the
    /// watchdog.
    static let attemptTimeout: Duration = .seconds(10)

    /// How long connection failures (``DatabaseFailure/connection``) may go on, every attempt failing, before the
    /// work treats the database as unable to write (``DatabaseFailure/unavailable``): long enough for a dropped
    /// connection, a deadlock or a busy SQLite file to clear by itself, well within the watchdog's limit.
    static let unreachableAfter: Duration = .seconds(5)

    /// Runs `body` until it succeeds or fails with an error that is not retried. `waitingFor`, when given, names the
    /// dependency the retries wait for, in the log line of every retry (e.g. "the database" at start). `health`
    /// hears whether the database answered, and keeps the one record of an outage of the whole worker; without it
    /// the outage is this call's own. `refining` sees every store failure of an attempt first, the attempt's own
    /// time limit included, and may turn it into another (one that is not retried, to end the call).
    static func transient<T: Sendable>(
        _ what: String,
        waitingFor dependency: String? = nil,
        health: WorkerHealth? = nil,
        attemptTimeout: Duration? = Retry.attemptTimeout,
        logger: Logger,
        refining refine: @escaping @Sendable (StoreError) -> StoreError = { $0 },
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 0
        // Since when this call waits for a database that cannot write; nil while it does not.
        var waitingSince: ContinuousClock.Instant?
        // Since when every attempt failed with a connection failure; nil after any other outcome.
        var failingSince: ContinuousClock.Instant?
        defer { if waitingSince != nil { health?.databaseWaitDone() } }
        while true {
            do {
                let value: T
                do {
                    value = try await oneAttempt(what, attemptTimeout: attemptTimeout, body)
                } catch let error as StoreError {
                    throw refine(error)
                }
                if let health {
                    if waitingSince != nil {
                        waitingSince = nil
                        health.databaseWaitDone()
                    }
                    if let outage = health.databaseAnswered() {
                        logRecovered(after: outage.lasted, relapses: outage.relapses, logger: logger)
                    }
                } else if let since = waitingSince {
                    logRecovered(after: .now - since, relapses: 0, logger: logger)
                }
                return value
            } catch let error as StoreError where error.failure.isRetried {
                WorkerMetrics.databaseErrors(error).increment()
                attempt += 1
                let now = ContinuousClock.now
                if error.failure == .connection {
                    failingSince = failingSince ?? now
                } else {
                    failingSince = nil
                }
                let unreachable = failingSince.map { now - $0 >= unreachableAfter } ?? false
                if error.failure == .unavailable || unreachable {
                    let began: Bool
                    if waitingSince != nil {
                        began = false
                        health?.databaseStillUnavailable("\(what): \(error.message)")
                    } else {
                        waitingSince = .now
                        began = health?.databaseWaits("\(what): \(error.message)") ?? true
                    }
                    if began {
                        logger.warning(
                            "the database cannot write now; holding the work in hand and trying again until it can",
                            metadata: ["worker.operation": "\(what)", "worker.error": "\(error)"])
                    }
                    try await Task.sleep(for: Backoff.storeUnavailable.delay(attempt: attempt))
                } else {
                    health?.databaseFailed("\(what): \(error.message)")
                    logger.warning(
                        dependency.map { "waiting for \($0), retrying" } ?? "transient failure, retrying in place",
                        metadata: [
                            "worker.operation": "\(what)", "worker.attempt": "\(attempt)",
                            "worker.error": "\(error.message)",
                        ])
                    try await Task.sleep(for: Backoff.storeConnectionFailure.delay(attempt: attempt))
                }
            }
        }
    }

    /// Runs `body` once, within `attemptTimeout` when given: running out of it fails with a transient `timeout`,
    /// retried like a lost connection unless the caller's refinement says otherwise.
    private static func oneAttempt<T: Sendable>(
        _ what: String, attemptTimeout: Duration?, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let attemptTimeout else { return try await body() }
        do {
            return try await withTimeLimit(attemptTimeout, body)
        } catch let timeout as TimeLimitError {
            throw StoreError(code: .timeout, message: "\(what) took longer than \(timeout.limit)", transient: true)
        }
    }

    private static func logRecovered(after outage: Duration, relapses: Int, logger: Logger) {
        logger.notice(
            "the database writes again",
            metadata: ["worker.outage": "\(outage)", "worker.outage_relapses": "\(relapses)"])
    }
}
