/// A database that runs bodies in transactions.
protocol SQLTransactor: Sendable {
    var dialect: SQLDialect { get }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws. Errors come out
    /// as ``StoreError``.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T
}
