/// Runs SQL statements inside one open transaction. Both backends implement it; the store's rules are
/// written once against it.
protocol SQLExecutor: Sendable {
    var dialect: SQLDialect { get }

    /// Runs one statement and returns its rows, read by column name.
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
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
