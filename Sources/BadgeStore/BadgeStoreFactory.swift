import Logging

/// Makes a store from a database URL (`--database-url`).
public enum BadgeStoreFactory {
    /// A store for `url`:
    /// - `postgres://user:password@host:port/database` or `postgresql://…` → ``PostgresBadgeStore``;
    /// - `sqlite:PATH` (also `sqlite://PATH`) → ``SQLiteBadgeStore`` on that file;
    /// - `sqlite::memory:` → ``SQLiteBadgeStore`` on a private in-memory database (for tests).
    ///
    /// Start the store's ``BadgeStore/run()`` in a task you own, then call ``BadgeStore/migrate()``.
    public static func make(url: String, logger: Logger) throws -> any SQLBackedBadgeStore {
        let lowered = url.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            return try PostgresBadgeStore(url: url, logger: logger)
        }
        if let path = try sqlitePath(from: url) {
            return SQLiteBadgeStore(path: path, logger: logger)
        }
        return SQLiteBadgeStore(path: nil, logger: logger)
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
