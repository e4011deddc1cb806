/// A database that runs bodies in transactions.
protocol SQLTransactor: Sendable {
    var dialect: SQLDialect { get }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws. Errors come out
    /// as ``StoreError``.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T

    /// Runs one statement, atomic by itself, and returns its rows: on PostgreSQL on its own, without `BEGIN` and
    /// `COMMIT` (two round trips fewer than a transaction); on SQLite in a transaction. Errors come out as
    /// ``StoreError``.
    func statement(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]

    /// Runs one statement that only reads, and returns its rows: as ``statement(_:_:)`` on PostgreSQL; on SQLite
    /// without a write transaction, so that it reads a snapshot at once instead of queueing for the write lock
    /// behind a worker's batches (the app's reads, see `AppReadQueries`). Errors come out as ``StoreError``.
    func read(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

extension SQLTransactor {
    func read(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await statement(sql, binds)
    }

    func statement(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try await transaction { try await $0.query(sql, binds) }
    }
}
