import Logging
import PostgresNIO

/// Runs statements on one leased connection.
struct PostgresExecutor: SQLExecutor {
    let connection: PostgresConnection
    let logger: Logger
    /// Statements prepared on this connection (see ``PostgresStatementCache``); nil runs every statement plainly.
    var statements: PostgresStatementCache? = nil

    var dialect: SQLDialect { .postgres }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        guard let statements, let key = PostgresStatementCache.key(sql, binds) else {
            return try await plainQuery(sql, binds)
        }
        let id = connection.id
        let step = statements.step(key, on: id) {
            connection.closeFuture.whenComplete { _ in statements.forget(id) }
        }
        switch step {
        case .direct:
            return try await plainQuery(sql, binds)
        case .prepare(let name):
            do {
                _ = try await plainQuery(PostgresStatementCache.prepareStatement(sql, name: name, binds: binds), [])
            } catch {
                let failure = PostgresTransactor.storeError(error)
                guard !failure.transient else { throw failure }
                // Not preparable as declared: from now on it runs plainly; this transaction starts again.
                statements.refuse(key)
                logger.warning(
                    "a statement could not be prepared; it runs unprepared from now on",
                    metadata: ["store.error": "\(failure)", "store.statement": "\(sql.prefix(200))"])
                throw StoreError(code: failure.code, message: failure.message, transient: true)
            }
            statements.prepared(key, as: name, on: id)
            return try await plainQuery(PostgresStatementCache.executeStatement(name: name, binds: binds), [])
        case .execute(let name):
            do {
                return try await plainQuery(PostgresStatementCache.executeStatement(name: name, binds: binds), [])
            } catch {
                let failure = PostgresTransactor.storeError(error)
                // 26000: the session lost its prepared statements (DISCARD ALL by a pooler, say). 0A000: a
                // migration changed a table so that the statement's result would change shape ("cached plan must
                // not change result type"). Either way this connection prepares its statements again.
                guard failure.code == .sqlState("26000") || failure.code == .sqlState("0A000") else { throw failure }
                statements.forget(id)
                throw StoreError(code: failure.code, message: failure.message, transient: true)
            }
        }
    }

    /// Runs `sql` with its binds as one unnamed statement.
    private func plainQuery(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        var bindings = PostgresBindings(capacity: binds.count)
        for value in binds {
            switch value {
            case .null: bindings.appendNull()
            case .int(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .bool(let value): bindings.append(value)
            }
        }
        let result = try await Self.queryIfOpen(
            PostgresQuery(unsafeSQL: sql, binds: bindings), on: connection, logger: logger)
        guard let first = result.rows.first else { return [] }
        // Every row of a result has the same columns: their names are read once.
        let columns = SQLColumns(first.map(\.columnName))
        return try result.rows.map { row in SQLRow(columns: columns, values: try row.map(Self.value)) }
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

extension PostgresExecutor {
    /// Runs `query` and collects its rows; fails at once, transiently, when the connection has already closed.
    ///
    /// postgres-nio 1.33 hands a query to its channel with a write whose promise is `nil`. Once the channel has
    /// closed (the server was stopped, say), its handlers are gone and such a write fails silently: the query
    /// never completes and its caller waits forever, cancellation or not. That can wedge a worker after a
    /// PostgreSQL restart: the pool can lease a connection that has just closed, and a transaction's next statement
    /// or ROLLBACK can follow a close. Checking the channel and writing in one event-loop task leaves no gap: an
    /// open channel still has its handler, which answers or fails the query.
    static func queryIfOpen(
        _ query: PostgresQuery, on connection: PostgresConnection, logger: Logger
    ) async throws -> PostgresQueryResult {
        @Sendable func checkAndWrite() -> EventLoopFuture<PostgresQueryResult> {
            if connection.isClosed {
                return connection.eventLoop.makeFailedFuture(
                    StoreError(code: .connectionClosed, message: "the connection has closed", transient: true))
            }
            return connection.query(query, logger: logger)
        }
        // On the loop already (a transaction runs there, see `EventLoopTaskExecutor`): this is one step of it.
        if connection.eventLoop.inEventLoop { return try await checkAndWrite().get() }
        return try await connection.eventLoop.flatSubmit(checkAndWrite).get()
    }
}
