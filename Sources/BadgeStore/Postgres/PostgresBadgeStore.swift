import BadgeCore
import Foundation
import Logging
import NIOSSL
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
/// let store = try PostgresBadgeStore(url: "postgres://user:pass@127.0.0.1:5432/db", logger: logger)
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { await store.run() }
///     try await store.migrate()
///     // … apply, pendingPushes, markSent …
///     try await store.close()  // makes run() return
/// }
/// ```
public final class PostgresBadgeStore: SQLBackedBadgeStore {
    let client: PostgresClient
    let database: PostgresTransactor
    /// Lease rounds run on a pool of their own: renewing a lease must never wait in line behind a worker's bulk
    /// of claims and batches (when it did, under load, leases expired while their owners were healthy).
    let leaseClient: PostgresClient
    let leaseDatabase: PostgresTransactor
    /// The schema that holds the tables (`search_path`), or `nil` for the server's default (`public`).
    public let schema: String?
    let hooks = StoreHooks()

    /// The shared SQL rules run here.
    public var sqlBackend: SQLBackend { SQLBackend(database: database, leases: leaseDatabase, hooks: hooks) }
    private let closeSignal = CloseSignal()

    /// Creates a store over `configuration`. `schema`, when given, becomes the connections' `search_path` and
    /// is created by ``migrate()`` if missing.
    public init(configuration: PostgresClient.Configuration, schema: String? = nil, logger: Logger) {
        var configuration = configuration
        if let schema {
            configuration.options.additionalStartupParameters.append(("search_path", schema))
        }
        self.schema = schema
        self.client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.database = PostgresTransactor(client: client, logger: logger)
        var leaseConfiguration = configuration
        leaseConfiguration.options.minimumConnections = 0
        leaseConfiguration.options.maximumConnections = 2
        self.leaseClient = PostgresClient(configuration: leaseConfiguration, backgroundLogger: logger)
        self.leaseDatabase = PostgresTransactor(client: leaseClient, logger: logger)
    }

    /// Creates a store from `postgres://user:password@host:port/database` (or `postgresql://`). Query
    /// parameters: `sslmode` (libpq's modes, see ``PostgresURL``: `verify-full` by default, `prefer` on loopback),
    /// `sslrootcert` (a PEM file of trusted roots), `schema` (see
    /// ``init(configuration:schema:logger:)``), `max_connections` (default 20), `idle_in_transaction_timeout_ms`
    /// (default 2000; 0 turns it off), `statement_timeout_ms` (default 9000; 0 turns it off).
    ///
    /// The statement timeout makes the server give up a statement that ran (or waited for a lock) that long, just
    /// before the worker gives up waiting for it (`Retry.attemptTimeout`, 10 s) and tries again: without it, the
    /// abandoned statement would go on running on the server, holding its row locks, and the retry would queue
    /// behind it (seen as claims timing out one after another after a PostgreSQL restart on a loaded machine).
    ///
    /// The idle-in-transaction timeout makes the server end a session that sat inside a transaction without
    /// sending anything for that long. A worker never pauses inside a transaction (no I/O but the statements
    /// themselves), so only a frozen or hung worker hits it; without it, a worker frozen mid-transaction would hold
    /// its row locks for as long as it stays frozen, and block the partition's new owner (and, through the lease
    /// row, that owner's lease renewals) all that time.
    public convenience init(url: String, logger: Logger) throws {
        let parsed = try PostgresURL(url)
        self.init(configuration: parsed.configuration, schema: parsed.schema, logger: logger)
    }

    /// Runs the connection pool until ``close()`` or until the calling task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.client.run() }
            group.addTask { await self.leaseClient.run() }
            await closeSignal.wait()
            group.cancelAll()
        }
    }

    public func migrate() async throws {
        let prelude = schema.map { ["CREATE SCHEMA IF NOT EXISTS \(quoteIdentifier($0))"] } ?? []
        try await Schema.migrate(database, prelude: prelude)
    }

    /// Stops the connection pool: ``run()`` returns and later operations fail.
    public func close() async throws {
        closeSignal.fire()
    }
}

/// `"name"` with inner quotes doubled.
func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// Runs transactions on connections leased from a `PostgresClient`.
struct PostgresTransactor: SQLTransactor {
    let client: PostgresClient
    let logger: Logger

    var dialect: SQLDialect { .postgres }

    func transaction<T: Sendable>(_ body: @Sendable (any SQLExecutor) async throws -> T) async throws -> T {
        // The pool may lease a connection that closed a moment ago (it learns of closes asynchronously). Nothing
        // was sent on it, so the transaction simply starts again on another one.
        var attempt = 1
        while true {
            do {
                return try await attemptTransaction(body)
            } catch let error as StoreError where error.code == .connectionClosedBeforeBegin && attempt < 5 {
                attempt += 1
            }
        }
    }

    private func attemptTransaction<T: Sendable>(
        _ body: @Sendable (any SQLExecutor) async throws -> T
    ) async throws -> T {
        do {
            return try await client.withConnection { connection in
                let sql = PostgresExecutor(connection: connection, logger: logger)
                do {
                    try await sql.execute("BEGIN")
                } catch let error as StoreError where error.code == .connectionClosed {
                    throw StoreError(code: .connectionClosedBeforeBegin, message: error.message, transient: true)
                }
                return try await sql.committing(body)
            }
        } catch {
            throw PostgresTransactor.storeError(error)
        }
    }

    /// SQLSTATE codes after which a retry may succeed.
    static func isTransient(sqlState: String) -> Bool {
        sqlState.hasPrefix("08")  // connection exception
            || ["40001", "40P01"].contains(sqlState)  // serialization failure, deadlock
            || ["57P01", "57P02", "57P03"].contains(sqlState)  // shutdown, crash shutdown, cannot connect now
            || ["53300", "55P03", "25P03"].contains(sqlState)  // too many connections, lock timeout, idle timeout
            || sqlState == "57014"  // statement timeout (or cancelled by an operator)
    }

    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PSQLError {
            switch error.code {
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                let message = error.serverInfo?[.message] ?? "server error"
                let code: StoreError.Code
                switch state {
                case "40001": code = .serializationFailure
                case "40P01": code = .deadlock
                default: code = state.isEmpty ? .server : .sqlState(state)
                }
                return StoreError(code: code, message: message, transient: isTransient(sqlState: state))
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
                let underlying = error.underlying.map { ": \($0)" } ?? ""
                return StoreError(code: .connection, message: "\(error.code)\(underlying)", transient: true)
            case .poolClosed:
                return StoreError.closed
            default:
                return StoreError(code: .postgres, message: "\(error.code)", transient: false)
            }
        }
        let text = String(describing: error)
        if text.contains("connectionCreationCircuitBreakerTripped") {
            return StoreError(code: .connection, message: "cannot connect to PostgreSQL", transient: true)
        }
        if text.contains("poolShutdown") { return StoreError.closed }
        return StoreError(code: .postgres, message: text, transient: false)
    }
}

/// Runs statements on one leased connection.
struct PostgresExecutor: SQLExecutor {
    let connection: PostgresConnection
    let logger: Logger

    var dialect: SQLDialect { .postgres }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [[SQLValue]] {
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .null: bindings.appendNull()
            case .int(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .bool(let value): bindings.append(value)
            }
        }
        let rows = try await Self.queryIfOpen(
            PostgresQuery(unsafeSQL: sql, binds: bindings), on: connection, logger: logger)
        return try rows.map { row in try row.map(Self.value) }
    }

    /// Runs `query` and collects its rows; fails at once, transiently, when the connection has already closed.
    ///
    /// postgres-nio 1.33 hands a query to its channel with a write whose promise is `nil`. Once the channel has
    /// closed (the server was stopped, say), its handlers are gone and such a write fails silently: the query
    /// never completes and its caller waits forever, cancellation or not. That is what wedged workers after a
    /// PostgreSQL restart: the pool can lease a connection that has just closed, and a transaction's next statement
    /// or ROLLBACK can follow a close. Checking the channel and writing in one event-loop task leaves no gap: an
    /// open channel still has its handler, which answers or fails the query.
    static func queryIfOpen(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> PostgresQueryResult {
        try await connection.eventLoop.flatSubmit { () -> EventLoopFuture<PostgresQueryResult> in
            if connection.isClosed {
                return connection.eventLoop.makeFailedFuture(
                    StoreError(code: .connectionClosed, message: "the connection has closed", transient: true))
            }
            return connection.query(query, logger: logger)
        }.get()
    }

    private static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int8: return .int(try cell.decode(Int64.self))
        case .int4: return .int(Int64(try cell.decode(Int32.self)))
        case .int2: return .int(Int64(try cell.decode(Int16.self)))
        case .bool: return .bool(try cell.decode(Bool.self))
        case .text, .varchar, .name, .bpchar: return .text(try cell.decode(String.self))
        default:
            // Only `void` (pg_advisory_xact_lock) reaches here; its value is never read.
            return .null
        }
    }
}

/// A parsed `postgres://` URL.
///
/// TLS follows libpq's `sslmode`: `disable`; `allow` and `prefer` (TLS when the server offers it, no certificate
/// check); `require` (TLS, no certificate check); `verify-ca` (the server's certificate must chain to a trusted root);
/// `verify-full` (and name the host). Trusted roots are the system's, or the PEM file `sslrootcert`. The default is
/// `verify-full` for a database on another host and `prefer` on a loopback address, where the traffic never leaves
/// the machine.
struct PostgresURL {
    var configuration: PostgresClient.Configuration
    var schema: String?
    /// The effective `sslmode`.
    var sslMode: String

    static let sslModes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]" || host.hasPrefix("/")
    }

    init(_ url: String) throws {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else { throw StoreError.badURL("not a postgres:// URL") }
        guard let host = components.host, !host.isEmpty else { throw StoreError.badURL("the URL has no host") }
        guard let user = components.user, !user.isEmpty else { throw StoreError.badURL("the URL has no user") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        var sslMode: String?
        var rootCertificate: String?
        var schema: String?
        var maximumConnections: Int?
        var idleInTransactionMilliseconds = 2000
        var statementTimeoutMilliseconds = 9000
        for item in components.queryItems ?? [] {
            switch (item.name, item.value ?? "") {
            case ("sslmode", let mode):
                guard Self.sslModes.contains(mode) else {
                    throw StoreError.badURL(
                        "unsupported sslmode \(mode) (one of \(Self.sslModes.joined(separator: ", ")))")
                }
                sslMode = mode
            case ("sslrootcert", let path):
                guard FileManager.default.isReadableFile(atPath: path) else {
                    throw StoreError.badURL("sslrootcert \(path) is not a readable file")
                }
                rootCertificate = path
            case ("schema", let value) where !value.isEmpty: schema = value
            case ("max_connections", let value):
                guard let number = Int(value), number > 0 else {
                    throw StoreError.badURL("max_connections must be a positive integer")
                }
                maximumConnections = number
            case ("idle_in_transaction_timeout_ms", let value):
                guard let number = Int(value), number >= 0 else {
                    throw StoreError.badURL("idle_in_transaction_timeout_ms must be a non-negative integer")
                }
                idleInTransactionMilliseconds = number
            case ("statement_timeout_ms", let value):
                guard let number = Int(value), number >= 0 else {
                    throw StoreError.badURL("statement_timeout_ms must be a non-negative integer")
                }
                statementTimeoutMilliseconds = number
            default: throw StoreError.badURL("unsupported URL parameter \(item.name)")
            }
        }
        // The default: verify-full for a database on another host, prefer on this one (loopback).
        // (sslrootcert given alone: verify-full against it.)
        let mode = sslMode ?? (Self.isLoopback(host) && rootCertificate == nil ? "prefer" : "verify-full")
        if rootCertificate != nil, mode != "verify-ca", mode != "verify-full" {
            throw StoreError.badURL("sslrootcert needs sslmode=verify-ca or verify-full")
        }
        self.sslMode = mode
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case "verify-full": tlsConfiguration.certificateVerification = .fullVerification
        case "verify-ca": tlsConfiguration.certificateVerification = .noHostnameVerification
        default: tlsConfiguration.certificateVerification = .none
        }
        if let rootCertificate { tlsConfiguration.trustRoots = .file(rootCertificate) }
        let tls: PostgresClient.Configuration.TLS =
            switch mode {
            case "disable": .disable
            case "allow", "prefer": .prefer(tlsConfiguration)
            default: .require(tlsConfiguration)
            }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: tls)
        if let maximumConnections { configuration.options.maximumConnections = maximumConnections }
        configuration.options.additionalStartupParameters.append(
            ("idle_in_transaction_session_timeout", String(idleInTransactionMilliseconds)))
        configuration.options.additionalStartupParameters.append(
            ("statement_timeout", String(statementTimeoutMilliseconds)))
        self.configuration = configuration
        self.schema = schema
    }
}
