import Logging

/// Makes a store from a database URL (`--database-url`).
public enum StoreFactory {
    /// A store for `url`:
    /// - `postgres://user:password@host:port/database` or `postgresql://…` → ``PostgresStore``;
    /// - `sqlite:PATH` (also `sqlite://PATH`) → ``SQLiteStore`` on that file;
    /// - `sqlite::memory:` → ``SQLiteStore`` on a private in-memory database (for tests).
    ///
    /// Start the store's ``PipelineStore/run()`` in a task you own, then call ``PipelineStore/migrate()``.
    public static func make(url: String, logger: Logger) throws -> any SQLBackedStore {
        let lowered = url.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            return try PostgresStore(url: url, logger: logger)
        }
        if let path = try sqlitePath(from: url) {
            return SQLiteStore(path: path, logger: logger)
        }
        return SQLiteStore(path: nil, logger: logger)
    }

    /// The file path of an SQLite URL: `sqlite:PATH` or `sqlite://PATH` → `PATH`; `sqlite::memory:` → `nil`
    /// (in memory). Throws for anything else.
    public static func sqlitePath(from url: String) throws -> String? {
        guard url.lowercased().hasPrefix("sqlite:") else {
            throw StoreError.badURL("unsupported database URL (expected postgres://…, postgresql://… or sqlite:PATH)")
        }
        var path = Substring(url.dropFirst("sqlite:".count))
        if path.hasPrefix("//") { path = path.dropFirst(2) }
        if path == ":memory:" { return nil }
        guard !path.isEmpty else { throw StoreError.badURL("sqlite: URL without a path") }
        return String(path)
    }
}
