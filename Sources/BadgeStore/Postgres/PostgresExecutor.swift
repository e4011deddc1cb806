import Foundation
import Logging
import PostgresNIO
import Synchronization

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

/// Which statements each PostgreSQL connection has prepared (server-side, by SQL `PREPARE`), so that a statement
/// run again and again is parsed and planned once per connection instead of once per call.
///
/// Why: at a few events per batch, planning the store's statements costs PostgreSQL more than running them.
///
/// How: postgres-nio 1.33 prepares protocol-level statements only for types known at compile time
/// (`PostgresPreparedStatement`), and our statements are built at run time, so a statement is prepared in SQL
/// (`PREPARE name (types) AS …`) and run with `EXECUTE name(literals)`; the values travel as literals (see
/// ``literal(_:)``). A statement is prepared on a connection the third time the same text (and the same bind
/// types) runs there, at most ``capacity`` per connection; others run unprepared. Prepared statements outlive the
/// transaction that prepared them (they are the session's, even when the transaction rolls back), and go with
/// the connection, whose entry is dropped when it closes.
///
/// Plans: the worker's connections start with `plan_cache_mode = force_generic_plan` (``startupParameters``), so a
/// prepared statement is planned once, when first executed, and never again for its values. Left to choose,
/// PostgreSQL keeps planning the fenced ingestion read for each call's values (its custom plans look cheaper).
/// Our binds are mostly JSON row sets whose contents the planner cannot see anyway, and every statement reads by
/// key. A generic plan does not follow a table as it grows, so the connections also start with
/// `enable_seqscan = off`: every statement the store runs reads by key through an index, and a plan cached while
/// a table was nearly empty would otherwise keep scanning it whole once it has grown. Generic plans pay off
/// together with the row sets' size kept out of the SQL text (see `SQLRowSet.table`): one text, one plan.
final class PostgresStatementCache: Sendable {
    /// What to do with one statement.
    enum Step: Equatable {
        /// Run it as a plain statement with binds.
        case direct
        /// Prepare it under this name, then execute it.
        case prepare(String)
        /// Execute the statement prepared under this name.
        case execute(String)
    }

    /// Most statements prepared on one connection.
    static let capacity = 200
    /// Runs of the same text on a connection before it is prepared there.
    static let usesBeforePreparing = 3
    /// The session settings the worker's connections start with (see the type's comment).
    static let startupParameters: [(String, String)] = [
        ("enable_seqscan", "off"), ("plan_cache_mode", "force_generic_plan"),
    ]

    private struct Connection {
        var uses: [String: Int] = [:]
        var prepared: [String: String] = [:]
    }

    private struct State {
        var connections: [PostgresConnection.ID: Connection] = [:]
        /// Texts whose `PREPARE` failed: they always run as plain statements.
        var refused: Set<String> = []
        var nextName = 0
    }

    private let state = Mutex(State())

    init() {}

    /// The key of a statement: its text and the types of its binds, or nil when it is not to be prepared: one
    /// without binds (`BEGIN`, `COMMIT`, schema changes), or one that cannot run as `EXECUTE` with literals (a NULL
    /// bind, whose type is not known, or text with a NUL character, which has no literal).
    static func key(_ sql: String, _ binds: [SQLValue]) -> String? {
        guard !binds.isEmpty else { return nil }
        var types = ""
        for value in binds {
            switch value {
            case .null: return nil
            case .int: types.append("i")
            case .bool: types.append("b")
            case .text(let text):
                if Self.containsNUL(text) { return nil }
                types.append("t")
            }
        }
        return types + "|" + sql
    }

    /// Whether `text` has a NUL character, found with `memchr` over its UTF-8: a row set's JSON is kilobytes, too
    /// much to walk through `text.utf8.contains(0)` for every statement.
    static func containsNUL(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
    }

    /// What to do with the statement `key` on `connection`; `watch` is called (once per connection) with a
    /// connection the cache has not seen, so that the caller can have its entry dropped when it closes.
    func step(_ key: String, on connection: PostgresConnection.ID, watch: () -> Void) -> Step {
        let (step, isNew) = state.withLock { state -> (Step, Bool) in
            let isNew = state.connections[connection] == nil
            var entry = state.connections[connection] ?? Connection()
            defer { state.connections[connection] = entry }
            if let name = entry.prepared[key] { return (.execute(name), isNew) }
            if state.refused.contains(key) || entry.prepared.count >= Self.capacity { return (.direct, isNew) }
            let uses = (entry.uses[key] ?? 0) + 1
            if uses < Self.usesBeforePreparing {
                entry.uses[key] = uses
                return (.direct, isNew)
            }
            entry.uses[key] = nil
            state.nextName += 1
            return (.prepare("badgepipe_\(state.nextName)"), isNew)
        }
        if isNew { watch() }
        return step
    }

    /// `name` is prepared on `connection`.
    func prepared(_ key: String, as name: String, on connection: PostgresConnection.ID) {
        state.withLock { $0.connections[connection, default: Connection()].prepared[key] = name }
    }

    /// The `PREPARE` of `key` failed: it runs as a plain statement from now on, on every connection.
    func refuse(_ key: String) {
        _ = state.withLock { $0.refused.insert(key) }
    }

    /// Forgets `connection` (closed, or its prepared statements are gone).
    func forget(_ connection: PostgresConnection.ID) {
        _ = state.withLock { $0.connections.removeValue(forKey: connection) }
    }

    /// `PREPARE name (types) AS sql`.
    static func prepareStatement(_ sql: String, name: String, binds: [SQLValue]) -> String {
        let types = binds.map { value -> String in
            switch value {
            case .int: "bigint"
            case .bool: "boolean"
            case .text, .null: "text"
            }
        }
        return "PREPARE \(name)" + (types.isEmpty ? "" : " (\(types.joined(separator: ", ")))") + " AS \(sql)"
    }

    /// `EXECUTE name(literals)`.
    static func executeStatement(name: String, binds: [SQLValue]) -> String {
        binds.isEmpty ? "EXECUTE \(name)" : "EXECUTE \(name)(\(binds.map(literal).joined(separator: ", ")))"
    }

    /// A bind as an SQL literal of the same value. Text is a dollar-quoted string (`$v$…$v$`), whose content is
    /// taken as it is whatever `standard_conforming_strings` says, so the text is copied whole, in one piece.
    /// (An escape string, `E'…'`, would double every backslash and quote: a row set's JSON of events whose text is
    /// quotes is mostly backslashes, and escaping a batch of 40 KB ones would keep its transaction open, idle on the
    /// server, while the worker escapes; see ``dollarTag(for:)``.) Integers are written in parentheses and cast, so
    /// that the most negative one reads as a `bigint` too.
    static func literal(_ value: SQLValue) -> String {
        switch value {
        case .null: return "NULL"
        case .int(let number): return "(\(number))::bigint"
        case .bool(let flag): return flag ? "TRUE" : "FALSE"
        case .text(let text):
            let tag = dollarTag(for: text)
            return tag + text + tag
        }
    }

    /// The tag that quotes `text`: `$v$`, or `$v0$`, `$v1$`, … — the first whose `$` and name `text` does not
    /// contain. Nothing in the text can then end the string early: inside the text there is no `$v…` at all, and
    /// across its end, the text's last characters and the closing tag cannot form the tag either (a tag ends the
    /// string where a `$` is followed by the name; the name holds no `$`, so such a `$` is the text's own, and then
    /// the text contains `$` and the name).
    static func dollarTag(for text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return "$v$" }
        if !text.contains("$v") { return "$v$" }
        var number = 0
        while text.contains("$v\(number)") { number += 1 }
        return "$v\(number)$"
    }
}
