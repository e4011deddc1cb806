import BadgeCore
import Logging
import NIOCore
import SQLiteNIO

/// The embedded single-node store: one SQLite file in WAL mode with a busy timeout.
///
/// All operations of one store run one at a time on one connection, on a thread of the store's own (so a
/// statement that waits for another process's lock blocks nobody else); several processes may share a file
/// (write transactions start with `BEGIN IMMEDIATE` and wait up to the busy timeout for each other; a
/// timeout comes out as a transient ``StoreError``). The connection opens on first use; ``run()`` is not
/// needed and only waits for ``close()``.
public final class SQLiteBadgeStore: SQLBackedBadgeStore {
    /// The database file, or `nil` for a private in-memory database.
    public let path: String?
    let database: SQLiteTransactor
    let hooks = StoreHooks()

    /// The shared SQL rules run here.
    public var sqlBackend: SQLBackend { SQLBackend(database: database, leases: database, hooks: hooks) }
    private let closeSignal = CloseSignal()

    /// Creates a store on the file at `path` (created if missing), or on a private in-memory database when
    /// `path` is `nil` or `":memory:"`.
    public init(path: String?, busyTimeoutMilliseconds: Int = 10_000, logger: Logger) {
        let path = path == ":memory:" ? nil : path
        self.path = path
        self.database = SQLiteTransactor(
            storage: path.map { .file(path: $0) } ?? .memory, busyTimeoutMilliseconds: busyTimeoutMilliseconds,
            logger: logger)
    }

    /// Waits until ``close()`` or until the calling task is cancelled.
    public func run() async {
        await closeSignal.wait()
    }

    public func migrate() async throws {
        try await Schema.migrate(database)
    }

    /// Closes the connection; ``run()`` returns and later operations fail.
    public func close() async throws {
        closeSignal.fire()
        try await database.close()
    }
}

/// Owns the store's one SQLite connection and runs one transaction at a time on it.
actor SQLiteTransactor: SQLTransactor {
    nonisolated var dialect: SQLDialect { .sqlite }

    private let storage: SQLiteConnection.Storage
    private let busyTimeoutMilliseconds: Int
    private let logger: Logger
    private var connection: SQLiteConnection?
    /// The connection's own thread: a statement waiting in the busy handler blocks only this store.
    private let threadPool = NIOThreadPool(numberOfThreads: 1)
    private var threadPoolStarted = false
    private var closed = false
    /// Whether a transaction holds the connection; later ones queue in `waiters`.
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(storage: SQLiteConnection.Storage, busyTimeoutMilliseconds: Int, logger: Logger) {
        self.storage = storage
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.logger = logger
    }

    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        var begun: SQLiteConnection?
        do {
            let connection = try await open()
            let sql = SQLiteExecutor(connection: connection)
            try await sql.execute("BEGIN IMMEDIATE")
            begun = connection
            return try await sql.committing(body)
        } catch {
            // A cancelled task (an attempt past its timeout, a shutdown past its bound) cannot run the async ROLLBACK
            // of `committing`: the thread pool refuses work from it. Without this one, the connection would stay
            // inside the transaction, holding the write lock, and every later BEGIN would fail.
            if let begun {
                let rollback: EventLoopFuture<[SQLiteRow]> = begun.query("ROLLBACK", [])
                _ = try? await rollback.get()
            }
            if error is CancellationError { throw error }
            throw SQLiteTransactor.storeError(error)
        }
    }

    func close() async throws {
        await acquire()
        defer { release() }
        guard !closed else { return }
        closed = true
        if let connection {
            self.connection = nil
            // The future-based close runs even in a cancelled task (a worker past its shutdown bound): the async one
            // would give up at once and leave the database open.
            try await connection.close().get()
        }
        if threadPoolStarted {
            try await threadPool.shutdownGracefully()
        }
    }

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Hands the connection to the next waiter (which stays `busy`), or frees it.
    private func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    private func open() async throws -> SQLiteConnection {
        if let connection { return connection }
        guard !closed else { throw StoreError.closed }
        if !threadPoolStarted {
            threadPool.start()
            threadPoolStarted = true
        }
        let connection = try await SQLiteConnection.open(
            storage: storage, threadPool: threadPool, logger: logger, on: MultiThreadedEventLoopGroup.singleton.any())
        do {
            let sql = SQLiteExecutor(connection: connection)
            try await sql.execute("PRAGMA busy_timeout = \(busyTimeoutMilliseconds)")
            if case .file = storage {
                // Switching a new file to WAL needs a moment without other connections' transactions, and SQLite
                // answers "database is locked" at once, without its busy handler, when there is none: try again.
                var attempt = 0
                while true {
                    do {
                        try await sql.execute("PRAGMA journal_mode = WAL")
                        break
                    } catch let error as SQLiteError where error.reason == .busy && attempt < 200 {
                        attempt += 1
                        try await Task.sleep(for: .milliseconds(25))
                    }
                }
            }
            try await sql.execute("PRAGMA synchronous = FULL")
        } catch {
            try? await connection.close()
            throw error
        }
        self.connection = connection
        return connection
    }

    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? SQLiteError {
            switch error.reason {
            case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot:
                return StoreError(code: .sqliteBusy, message: error.message, transient: true)
            case .locked, .lockedBySharedCache, .lockedVirtualTable:
                return StoreError(code: .sqliteLocked, message: error.message, transient: true)
            case .constraint, .constraintCheckFailed, .constraintForeignKeyFailed, .constraintUserFunctionFailed,
                .constraintNotNullFailed, .constraintPrimaryKeyFailed, .constraintTriggerFailed,
                .constraintUniqueFailed, .constraintVirtualTableFailed, .constraintUniqueRowIDFailed,
                .constraintStrictDataTypeFailed:
                return StoreError(code: .sqliteConstraint, message: error.message, transient: false)
            case .tooBig:
                return StoreError(code: StoreError.Code("sqlite_too_big"), message: error.message, transient: false)
            case .mismatch:
                return StoreError(code: StoreError.Code("sqlite_mismatch"), message: error.message, transient: false)
            case .range:
                return StoreError(code: StoreError.Code("sqlite_range"), message: error.message, transient: false)
            default:
                return StoreError(code: .sqlite, message: "\(error.reason): \(error.message)", transient: false)
            }
        }
        return StoreError(code: .sqlite, message: String(describing: error), transient: false)
    }
}

/// Runs statements on the SQLite connection. Placeholders `$N` become SQLite's numbered `?N`.
struct SQLiteExecutor: SQLExecutor {
    let connection: SQLiteConnection

    var dialect: SQLDialect { .sqlite }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [[SQLValue]] {
        let data: [SQLiteData] = binds.map { value in
            switch value {
            case .null: return .null
            case .int(let value): return .integer(SQLiteInt64(value))
            case .text(let value): return .text(value)
            case .bool(let value): return .integer(value ? 1 : 0)
            }
        }
        let rows = try await connection.query(Self.numberedPlaceholders(sql), data)
        return rows.map { row in
            row.columns.map { column in
                switch column.data {
                case .integer(let value): return .int(Int64(value))
                case .float(let value): return .int(Int64(value))
                case .text(let value): return .text(value)
                case .blob(let buffer): return .text(String(decoding: buffer.readableBytesView, as: UTF8.self))
                case .null: return .null
                }
            }
        }
    }

    /// Rewrites `$12` to `?12`: a `$` followed by a digit. Any other `$` (JSON paths such as `'$[0]'`) stays.
    static func numberedPlaceholders(_ sql: String) -> String {
        guard sql.contains("$") else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count)
        var previousWasDollar = false
        for character in sql {
            if previousWasDollar {
                result.append(character.isASCII && character.isNumber ? "?" : "$")
                previousWasDollar = false
            }
            if character == "$" {
                previousWasDollar = true
            } else {
                result.append(character)
            }
        }
        if previousWasDollar { result.append("$") }
        return result
    }
}
