/// A value bound to, or read from, an SQL statement.
enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case bool(Bool)

    /// The value for an optional integer.
    static func int(_ value: Int64?) -> SQLValue {
        value.map { .int($0) } ?? .null
    }

    /// The value for an optional string.
    static func text(_ value: String?) -> SQLValue {
        value.map { .text($0) } ?? .null
    }

    var int64: Int64? {
        switch self {
        case .int(let value): return value
        case .bool(let value): return value ? 1 : 0
        case .text(let value): return Int64(value)
        case .null: return nil
        }
    }

    var string: String? {
        switch self {
        case .text(let value): return value
        case .int(let value): return String(value)
        case .bool(let value): return String(value)
        case .null: return nil
        }
    }

    /// Booleans are integers 0/1 in SQLite and `boolean` in PostgreSQL.
    var bool: Bool? {
        switch self {
        case .bool(let value): return value
        case .int(let value): return value != 0
        case .text(let value): return value == "t" || value == "true" || value == "1"
        case .null: return nil
        }
    }

    var isNull: Bool { self == .null }
}

/// The SQL flavour of a backend. Statements are written once with `$1`-style placeholders; the few spots
/// where the dialects differ ask the dialect.
enum SQLDialect: Sendable {
    case postgres
    case sqlite

    /// `FOR UPDATE` on PostgreSQL; nothing on SQLite, whose write transactions are exclusive.
    var forUpdate: String {
        self == .postgres ? " FOR UPDATE" : ""
    }

    /// `FOR UPDATE SKIP LOCKED` on PostgreSQL (rows another transaction holds are left out); nothing on SQLite.
    var forUpdateSkipLocked: String {
        self == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
    }

    /// `FOR KEY SHARE` on PostgreSQL; nothing on SQLite. Unlike `FOR SHARE` it lets plain updates of the row's
    /// other columns through (they take `FOR NO KEY UPDATE`) and still blocks `FOR UPDATE` and deletes.
    var forKeyShare: String {
        self == .postgres ? " FOR KEY SHARE" : ""
    }

    /// `FOR NO KEY UPDATE` on PostgreSQL (what an update of non-key columns takes); nothing on SQLite. Conflicts
    /// with `FOR UPDATE` and with itself, not with `FOR KEY SHARE`.
    var forNoKeyUpdate: String {
        self == .postgres ? " FOR NO KEY UPDATE" : ""
    }

    /// The column type of an auto-incrementing 64-bit primary key.
    var autoIncrementPrimaryKey: String {
        self == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
    }
}

/// Runs SQL statements inside one open transaction. Both backends implement it; the store's rules are
/// written once against it.
protocol SQLExecutor: Sendable {
    var dialect: SQLDialect { get }

    /// Runs one statement and returns its rows (cells in select-list order).
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [[SQLValue]]
}

extension SQLExecutor {
    /// Runs one statement, ignoring any rows.
    func execute(_ sql: String, _ binds: [SQLValue] = []) async throws {
        _ = try await query(sql, binds)
    }

    /// In a transaction this executor has begun: runs `body`, then commits; on any error rolls back and rethrows.
    /// (After a failed COMMIT the database has already rolled back; the ROLLBACK then only warns.)
    func committing<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        do {
            let result = try await body(self)
            try await execute("COMMIT")
            return result
        } catch {
            try? await execute("ROLLBACK")
            throw error
        }
    }
}

/// A database that runs bodies in transactions.
protocol SQLTransactor: Sendable {
    var dialect: SQLDialect { get }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws. Errors come out
    /// as ``StoreError``.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T
}
