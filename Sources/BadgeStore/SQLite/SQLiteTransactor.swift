import Logging
import NIOCore
import SQLiteNIO

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

    /// One read in autocommit mode: in WAL, a snapshot that neither waits for nor blocks a writer (`BEGIN
    /// IMMEDIATE`, which every transaction here takes, waited in the busy handler behind the worker's batches: an
    /// API on the worker's file answered its streams seconds late under a steady load).
    func read(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        await acquire()
        defer { release() }
        do {
            return try await SQLiteExecutor(connection: try await open()).query(sql, binds)
        } catch {
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
}

extension SQLiteTransactor {
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? SQLiteError { return storeError(reason: error.reason, message: error.message) }
        return StoreError(code: .sqlite, message: String(describing: error), transient: false)
    }

    /// The store's error for an SQLite result code and its message.
    static func storeError(reason: SQLiteError.Reason, message: String) -> StoreError {
        let failure = DatabaseFailure.classify(sqlite: reason)
        let code: StoreError.Code
        switch reason {
        case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot: code = .sqliteBusy
        case .locked, .lockedBySharedCache, .lockedVirtualTable: code = .sqliteLocked
        case .tooBig: code = StoreError.Code("sqlite_too_big")
        case .mismatch: code = StoreError.Code("sqlite_mismatch")
        case .range: code = StoreError.Code("sqlite_range")
        case .full: code = .sqliteFull
        default: code = failure == .data ? .sqliteConstraint : .sqlite
        }
        return StoreError(code: code, message: code == .sqlite ? "\(reason): \(message)" : message, failure: failure)
    }
}
