import BadgeCore
import BadgeSupport
import Foundation
import Logging
import NIOPosix
import PostgresNIO

/// The PostgreSQL store, for fleets: several workers may write to one database at once.
///
/// One user's events serialise on a row lock of the user's `users` row (`SELECT … FOR UPDATE`, taken for
/// all of a batch's users in user-id order, so batches do not deadlock each other); serialization failures,
/// deadlocks and lost connections come out as transient ``StoreError``s, after which the batch had no effect
/// and can be retried.
///
/// Lifecycle: the store owns a `PostgresClient` (a connection pool) that only works while ``run()`` runs.
/// ```swift
/// let store = try PostgresStore(url: "postgres://user:pass@127.0.0.1:5432/db", logger: logger)
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { await store.run() }
///     try await store.migrate()
///     // … apply, claimPushes, recordDeliveries …
///     try await store.close()  // makes run() return
/// }
/// ```
public final class PostgresStore: SQLBackedStore {
    let client: PostgresClient
    let database: PostgresTransactor
    /// Lease rounds run on a pool of their own, on an event loop of their own (``leaseEventLoopGroup``): renewing
    /// a lease must never wait in line behind a worker's bulk of claims and batches (under load, leases would expire
    /// while their owners are healthy).
    let leaseClient: PostgresClient
    let leaseDatabase: PostgresTransactor
    /// The schema that holds the tables (`search_path`), or `nil` for the server's default (`public`).
    public let schema: String?
    let hooks = StoreHooks()

    /// The shared SQL rules run here.
    public var sqlBackend: SQLBackend {
        SQLBackend(database: database, leases: leaseDatabase, hooks: hooks, outboxChannel: outboxChannel)
    }
    /// The channel of ``listenForOutbox(listening:partition:)``: one per schema, so that deployments (and tests)
    /// sharing a database do not wake each other.
    var outboxChannel: String { "badgepipe_outbox" + (schema.map { "." + $0 } ?? "") }
    private let closeSignal = CloseSignal<Void>()
    private let logger: Logger
    /// Resolved by ``run()`` as it starts each pool, just before it calls the pool's own `run()` (the transactors
    /// wait for them, see `PostgresTransactor.started`).
    private let clientStarted: CloseSignal<Void>
    private let leaseClientStarted: CloseSignal<Void>

    /// Creates a store over `configuration`. `schema`, when given, becomes the connections' `search_path` and
    /// is created by ``migrate()`` if missing. With `preparedStatements` (the default), the pool of batches and
    /// claims prepares the statements each connection runs again and again (see `PostgresStatementCache`); turn
    /// it off behind a proxy that hands one client's transactions to different server sessions (PgBouncer's
    /// transaction pooling), where a session's prepared statements are not there for the next transaction.
    public init(
        configuration: PostgresClient.Configuration, schema: String? = nil, preparedStatements: Bool = true,
        logger: Logger
    ) {
        var configuration = configuration
        if let schema {
            configuration.options.additionalStartupParameters.append(("search_path", schema))
        }
        self.schema = schema
        self.logger = logger
        var leaseConfiguration = configuration
        // The pool of batches and claims prepares the statements it runs again and again (see
        // `PostgresStatementCache`, which also says why its sessions start with `enable_seqscan = off`).
        if preparedStatements {
            configuration.options.additionalStartupParameters += PostgresStatementCache.startupParameters
        }
        let (clientStarted, leaseClientStarted) = (CloseSignal<Void>(), CloseSignal<Void>())
        (self.clientStarted, self.leaseClientStarted) = (clientStarted, leaseClientStarted)
        let poolLogger = PoolLogFilter.logger(logger)
        self.client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        self.database = PostgresTransactor(
            client: client, logger: logger, statements: preparedStatements ? PostgresStatementCache() : nil,
            started: clientStarted)
        leaseConfiguration.options.minimumConnections = 0
        leaseConfiguration.options.maximumConnections = 2
        self.leaseClient = PostgresClient(
            configuration: leaseConfiguration, eventLoopGroup: Self.leaseEventLoopGroup, backgroundLogger: poolLogger)
        self.leaseDatabase = PostgresTransactor(client: leaseClient, logger: logger, started: leaseClientStarted)
    }

    /// The one thread the lease pools of every store in the process run on (and, through `EventLoopTaskExecutor`,
    /// their transactions' code). A transaction runs its code on its connection's event loop; on the shared loops
    /// a lease round would wait while a batch of large events builds its statements there, long enough on a loaded
    /// machine for the round's own transaction to sit idle past the server's idle-in-transaction timeout and the
    /// lease to go to another worker. Like NIO's singletons, it lives as long as the process.
    static let leaseEventLoopGroup: MultiThreadedEventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Creates a store from `postgres://user:password@host:port/database` (or `postgresql://`). Query
    /// parameters: `sslmode` (libpq's modes, see ``PostgresURL``: `verify-full` by default, `prefer` on loopback),
    /// `sslrootcert` (a PEM file of trusted roots), `schema` (see
    /// ``init(configuration:schema:preparedStatements:logger:)``), `max_connections` (default 20), `idle_in_transaction_timeout_ms`
    /// (default 2000; 0 turns it off), `statement_timeout_ms` (default 9000; 0 turns it off), `prepared_statements`
    /// (`on` by default, `off` behind a transaction-pooling proxy, see
    /// ``init(configuration:schema:preparedStatements:logger:)``).
    ///
    /// The statement timeout makes the server give up a statement that ran (or waited for a lock) that long, just
    /// before the worker gives up waiting for it (`Retry.attemptTimeout`, 10 s) and tries again: without it, the
    /// abandoned statement would go on running on the server, holding its row locks, and the retry would queue
    /// behind it.
    ///
    /// The idle-in-transaction timeout makes the server end a session that sat inside a transaction without
    /// sending anything for that long. A worker never pauses inside a transaction (no I/O but the statements
    /// themselves), so only a frozen or hung worker hits it; without it, a worker frozen mid-transaction would hold
    /// its row locks for as long as it stays frozen, and block the partition's new owner (and, through the lease
    /// row, that owner's lease renewals) all that time.
    public convenience init(url: String, logger: Logger) throws {
        let parsed = try PostgresURL(url)
        self.init(
            configuration: parsed.configuration, schema: parsed.schema, preparedStatements: parsed.preparedStatements,
            logger: logger)
    }

    /// Runs the connection pool until ``close()`` or until the calling task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                self.clientStarted.resolve()
                await self.client.run()
            }
            group.addTask {
                self.leaseClientStarted.resolve()
                await self.leaseClient.run()
            }
            _ = await closeSignal.waitUnlessCancelled()
            group.cancelAll()
        }
    }

    /// Listens on the store's channel (`LISTEN`, on a connection of the pool held for it) and calls `partition` with
    /// each partition woken, `listening` each time the listen (re)starts: what was sent while it was not listening
    /// is lost, so the caller then looks at every partition it holds. A failed connection is opened again after a
    /// backoff (100 ms doubling to 5 s), for as long as it takes. Returns when the calling task is cancelled.
    public func listenForOutbox(
        listening: @escaping @Sendable () -> Void, partition: @escaping @Sendable (Int) -> Void
    ) async {
        let backoff = Backoff.storeReconnect
        var attempt = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: outboxChannel) { notifications in
                        if attempt > 0 {
                            logger.info(
                                "listening for outbox wake-ups again",
                                metadata: ["store.listen.attempts": "\(attempt)"])
                        }
                        attempt = 0
                        listening()
                        for try await notification in notifications {
                            if let woken = Int(notification.payload) { partition(woken) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                // Once when it starts failing: until it listens again, partitions learn of other workers' wake-ups
                // only from their own held-back polls and lease rounds.
                if attempt == 0 {
                    logger.warning(
                        "cannot listen for outbox wake-ups; retrying with backoff",
                        metadata: ["store.listen.channel": "\(outboxChannel)", "store.error": "\(error)"])
                }
            }
            attempt += 1
            try? await Task.sleep(for: backoff.delay(attempt: attempt))
        }
    }

    public func migrate() async throws {
        let prelude = schema.map { ["CREATE SCHEMA IF NOT EXISTS \(quoteIdentifier($0))"] } ?? []
        try await Schema.migrate(database, prelude: prelude)
    }

    /// Stops the connection pool: ``run()`` returns and later operations fail.
    public func close() async throws {
        closeSignal.resolve()
    }
}

/// `"name"` with inner quotes doubled.
func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// The pools' background logger: the store's logger less the one warning of postgres-nio that only a race can raise
/// here.
///
/// postgres-nio warns of a connection leased before its client's `run()` has been called, which it notes in the
/// first step of `run()`. The store's transactors never ask before: they wait for ``PostgresStore/run()`` to resolve
/// their `started` signal, just before it calls the pool's `run()`. A transaction woken by that signal can still
/// reach the pool before `run()`'s first step has run, on a loaded machine, and the pool then warns of what is only
/// that gap (the lease waits for `run()` either way). Every other message goes through as it was.
struct PoolLogFilter: LogHandler {
    /// The text of the warning dropped (postgres-nio 1.33's `PostgresClient.leaseConnection`).
    static let earlyLease =
        "Trying to lease connection from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet."

    var wrapped: any LogHandler

    /// `logger` with the warning dropped.
    static func logger(_ logger: Logger) -> Logger {
        Logger(label: logger.label) { _ in PoolLogFilter(wrapped: logger.handler) }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        if event.level == .warning && "\(event.message)" == Self.earlyLease { return }
        wrapped.log(event: event)
    }
}
