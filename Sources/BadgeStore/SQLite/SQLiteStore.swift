import BadgeCore
import BadgeSupport
import Logging
import SQLiteNIO

/// The embedded single-node store: one SQLite file in WAL mode with a busy timeout.
///
/// All operations of one store run one at a time on one connection, on a thread of the store's own (so a
/// statement that waits for another process's lock blocks nobody else); several processes may share a file
/// (write transactions start with `BEGIN IMMEDIATE` and wait up to the busy timeout for each other; a
/// timeout comes out as a transient ``StoreError``). The connection opens on first use; ``run()`` is not
/// needed and only waits for ``close()``.
public final class SQLiteStore: SQLBackedStore {
    /// The database file, or `nil` for a private in-memory database.
    public let path: String?
    let database: SQLiteTransactor
    let hooks = StoreHooks()

    /// The shared SQL rules run here.
    public var sqlBackend: SQLBackend { SQLBackend(database: database, leases: database, hooks: hooks) }

    /// One worker writes an SQLite database, and wakes its own delivery loops: nothing to listen to.
    public func listenForOutbox(
        listening: @escaping @Sendable () -> Void, partition: @escaping @Sendable (Int) -> Void
    ) async {}
    private let closeSignal = CloseSignal<Void>()

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
        _ = await closeSignal.waitUnlessCancelled()
    }

    public func migrate() async throws {
        try await Schema.migrate(database)
    }

    /// Closes the connection; ``run()`` returns and later operations fail.
    public func close() async throws {
        closeSignal.resolve()
        try await database.close()
    }
}
