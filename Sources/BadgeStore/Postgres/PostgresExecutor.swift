import Logging
import PostgresNIO

/// The statements a PostgreSQL connection has prepared: postgres-nio's prepared queries, by text and bind types.
typealias PostgresStatements = PostgresStatementCache<PreparedQuery>

/// Runs statements on one leased connection.
struct PostgresExecutor: SQLExecutor {
    let connection: PostgresConnection
    let logger: Logger
    /// Statements prepared on this connection (see ``PostgresStatementCache``); nil runs every statement plainly.
    var statements: PostgresStatements? = nil

    var dialect: SQLDialect { .postgres }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        guard let statements, let key = PostgresStatements.key(sql, binds) else {
            return try await plainQuery(sql, binds)
        }
        let id = connection.id
        let step = statements.step(key, on: id) {
            connection.closeFuture.whenComplete { _ in statements.forget(id) }
        }
        switch step {
        case .direct:
            return try await plainQuery(sql, binds)
        case .prepare:
            let prepared: PreparedQuery
            do {
                let typed = PostgresStatements.typed(sql, binds)
                prepared = try await Self.ifOpen(connection) { connection.prepare(query: typed) }
            } catch {
                let failure = failure(of: error)
                guard !failure.transient else { throw failure }
                // Not preparable as declared: from now on it runs plainly; this transaction starts again.
                statements.refuse(key)
                logger.warning(
                    "a statement could not be prepared; it runs unprepared from now on",
                    metadata: ["store.error": "\(failure)", "store.statement": "\(sql.prefix(200))"])
                throw StoreError(code: failure.code, message: failure.message, transient: true)
            }
            statements.prepared(key, as: prepared, on: id)
            return try await execute(prepared, binds)
        case .execute(let prepared):
            do {
                return try await execute(prepared, binds)
            } catch {
                let failure = failure(of: error)
                // 26000: the session lost its prepared statements (DISCARD ALL by a pooler, say). 0A000: a
                // migration changed a table so that the statement's result would change shape ("cached plan must
                // not change result type"). Either way this connection prepares its statements again.
                guard failure.code == .sqlState("26000") || failure.code == .sqlState("0A000") else { throw failure }
                statements.forget(id)
                throw StoreError(code: failure.code, message: failure.message, transient: true)
            }
        }
    }

    /// What a failed preparation or execution of a prepared statement means. postgres-nio's `PreparedQuery` reports
    /// errors in their older shapes (see `PostgresTransactor.storeError`); whatever its shape, a failure that left
    /// the connection closed is a lost connection, which the transaction's retry takes another one for.
    private func failure(of error: any Error) -> StoreError {
        let failure = PostgresTransactor.storeError(error)
        guard failure.code == .postgres, connection.isClosed else { return failure }
        return StoreError(code: .connection, message: failure.message, transient: true)
    }

    /// Runs a prepared statement with `binds` in binary, the types ``PostgresStatementCache/typed(_:_:)`` cast its
    /// parameters to.
    private func execute(_ prepared: PreparedQuery, _ binds: [SQLValue]) async throws -> [SQLRow] {
        let values = binds.map { value -> PostgresData in
            switch value {
            case .null: PostgresData(type: .text)
            case .int(let number): PostgresData(type: .int8, value: ByteBuffer(integer: number))
            case .bool(let flag): PostgresData(type: .bool, value: ByteBuffer(integer: UInt8(flag ? 1 : 0)))
            case .text(let text): PostgresData(type: .text, value: ByteBuffer(string: text))
            }
        }
        return try Self.rows(try await Self.ifOpen(connection) { prepared.execute(values) })
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
        let query = PostgresQuery(unsafeSQL: sql, binds: bindings)
        return try Self.rows(try await Self.ifOpen(connection) { connection.query(query, logger: logger) }.rows)
    }

    private static func rows(_ rows: [PostgresRow]) throws -> [SQLRow] {
        guard let first = rows.first else { return [] }
        // Every row of a result has the same columns: their names are read once.
        let columns = SQLColumns(first.map(\.columnName))
        return try rows.map { row in SQLRow(columns: columns, values: try row.map(Self.value)) }
    }

    /// A cell's value, read from its bytes in PostgreSQL's binary format. postgres-nio asks for every result in binary
    /// (its `Bind` says so for every statement), but a `PreparedQuery` keeps the columns' format as the statement's
    /// description gave it, text, and its cells' own decoding then reads binary bytes as text: so the bytes are read
    /// here, for the few types the store's statements return.
    private static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard var bytes = cell.bytes else { return .null }
        let value: SQLValue?
        switch cell.dataType {
        case .int8: value = bytes.readableBytes == 8 ? bytes.readInteger(as: Int64.self).map { .int($0) } : nil
        case .int4: value = bytes.readableBytes == 4 ? bytes.readInteger(as: Int32.self).map { .int(Int64($0)) } : nil
        case .int2: value = bytes.readableBytes == 2 ? bytes.readInteger(as: Int16.self).map { .int(Int64($0)) } : nil
        case .bool: value = bytes.readableBytes == 1 ? bytes.readInteger(as: UInt8.self).map { .bool($0 != 0) } : nil
        case .text, .varchar, .name, .bpchar: value = .text(String(buffer: bytes))
        default:
            // Only `void` (pg_advisory_xact_lock) reaches here; its value is never read.
            return .null
        }
        guard let value else {
            throw StoreError(
                code: .postgres,
                message: "column \(cell.columnName): a \(cell.dataType) value of \(bytes.readableBytes) bytes",
                transient: false)
        }
        return value
    }
}
