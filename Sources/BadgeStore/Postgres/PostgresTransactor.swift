import BadgeSupport
import Logging
import NIOCore
import PostgresNIO

/// Runs transactions on connections leased from a `PostgresClient`.
struct PostgresTransactor: SQLTransactor {
    let client: PostgresClient
    let logger: Logger
    /// Statements prepared per connection, or nil to run every statement plainly.
    var statements: PostgresStatementCache? = nil
    /// Resolved once the client's `run()` has been called (see ``PostgresStore/run()``).
    var started: CloseSignal<Void>? = nil

    var dialect: SQLDialect { .postgres }

    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        // The pool may lease a connection that closed a moment ago (it learns of closes asynchronously). Nothing
        // was sent on it, so the transaction simply starts again on another one.
        var attempt = 1
        while true {
            do {
                return try await attemptTransaction(body)
            } catch let error as StoreError where error.code == .connectionClosedBeforeBegin && attempt < 5 {
                attempt += 1
            }
        }
    }

    func statement(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await onConnection { try await $0.query(sql, binds) }
    }

    /// Runs `body` on one connection held for its whole run, outside any transaction: each statement commits on its
    /// own unless `body` begins a transaction (which it must end). For work that needs one session across several
    /// transactions: a session-level advisory lock, `CREATE INDEX CONCURRENTLY` (see `Schema`). Statements run
    /// plainly, never prepared; session settings `body` changes it must reset, the connection goes back to the pool.
    func session<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        do {
            return try await onConnection(prepared: false) { try await body($0) }
        } catch {
            // A cancelled session (a worker told to stop while it waits for another migrator) says so.
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
    }

    private func attemptTransaction<T: Sendable>(
        _ body: @Sendable (any SQLExecutor) async throws -> T
    ) async throws -> T {
        try await onConnection { sql in
            do {
                try await sql.execute("BEGIN")
            } catch let error as StoreError where error.code == .connectionClosed {
                throw StoreError(code: .connectionClosedBeforeBegin, message: error.message, transient: true)
            }
            return try await sql.committing(body)
        }
    }

    /// Runs `body` with an executor on a leased connection, on the connection's event loop (see
    /// `EventLoopTaskExecutor`); errors come out as ``StoreError``.
    private func onConnection<T: Sendable>(
        prepared: Bool = true, _ body: @Sendable (PostgresExecutor) async throws -> T
    ) async throws -> T {
        // A lease asked for before the pool runs waits for it anyway, but postgres-nio logs a warning for it: the
        // store's first statements (a worker's services all start at once) wait here instead, without one.
        if let started, !started.isResolved, await started.waitUnlessCancelled() == nil { throw CancellationError() }
        do {
            return try await client.withConnection { connection in
                try await withTaskExecutorPreference(EventLoopTaskExecutor(connection.eventLoop)) {
                    try await body(
                        PostgresExecutor(
                            connection: connection, logger: logger, statements: prepared ? statements : nil))
                }
            }
        } catch {
            throw PostgresTransactor.storeError(error)
        }
    }
}

extension PostgresTransactor {
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? "server error"
                let code: StoreError.Code
                switch state {
                case "40001": code = .serializationFailure
                case "40P01": code = .deadlock
                default: code = state.isEmpty ? .server : .sqlState(state)
                }
                return StoreError(code: code, message: message, failure: DatabaseFailure.classify(sqlState: state))
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
                let underlying = error.underlying.map { ": \($0)" } ?? ""
                return StoreError(code: .connection, message: "\(error.code)\(underlying)", transient: true)
            case .poolClosed:
                return StoreError.closed
            default:
                return StoreError(code: .postgres, message: "\(error.code)", transient: false)
            }
        }
        let text = String(describing: error)
        if text.contains("connectionCreationCircuitBreakerTripped") {
            return StoreError(code: .connection, message: "cannot connect to PostgreSQL", transient: true)
        }
        if text.contains("poolShutdown") { return StoreError.closed }
        return StoreError(code: .postgres, message: text, transient: false)
    }
}

/// Runs a task's jobs on one NIO event loop: a transaction's code runs on the thread of the connection it talks
/// to (see `PostgresTransactor`).
///
/// Why: on the cooperative pool, every statement crosses threads twice, to the connection's event loop to be
/// written (an `eventfd` wake-up) and back to the pool when its answer comes (a `futex` wake-up), and on a machine
/// of few cores those context switches weigh heavily in a worker's CPU. On the connection's own loop, writing a
/// statement, reading its answer and resuming the transaction after it are steps of one thread, and the loop only
/// sleeps in `epoll` while the database works. The code between two statements is short (building and reading row
/// sets), so the loop is not held up for long.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
