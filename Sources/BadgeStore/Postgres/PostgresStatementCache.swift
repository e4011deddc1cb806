import Foundation
import PostgresNIO
import Synchronization

/// Which statements each PostgreSQL connection has prepared, so that a statement run again and again is parsed
/// and planned once per connection instead of once per call.
///
/// Why: at a few events per batch, planning was most of PostgreSQL's work. Measured with `pg_stat_statements`
/// (`track_planning`) at 300 events/s on 3 workers: 8.6 s of planning against 3.7 s of execution, the fenced claim
/// alone 0.39 ms of planning a call against 0.12 ms of execution.
///
/// How: a statement is prepared on a connection the third time the same text (and the same bind types) runs
/// there, at most ``capacity`` per connection; others run as before. `Statement` is what a connection keeps for a
/// prepared statement: postgres-nio's `PreparedQuery` in the store (see `PostgresExecutor`), a name in the tests.
/// Prepared statements outlive the transaction that prepared them (they are the session's, even when the
/// transaction rolls back), and go with the connection, whose entry is dropped when it closes.
///
/// The statements are prepared in the protocol (a `Parse` once, then `Bind` and `Execute` with the values in binary):
/// postgres-nio 1.33 does that for SQL built at run time only through `PostgresDatabase.prepare(query:)`, which
/// lets the server infer the parameters' types, so each parameter is cast to its bind's type in the prepared text
/// (``typed(_:_:)``). They were prepared in SQL before (`PREPARE name (types) AS …`, then `EXECUTE name(literals)`),
/// whose text PostgreSQL parsed at every execution, literals and all: 3.2 % of PostgreSQL's CPU live at 3,000
/// events/s, and the worker escaped every row set's JSON into a literal (docs/performance.md).
///
/// Plans: the worker's connections start with `plan_cache_mode = force_generic_plan` (``startupParameters``), so a
/// prepared statement is planned once, when first executed, and never again for its values. Left to choose,
/// PostgreSQL kept planning the fenced ingestion read for each call's values (its custom plans looked cheaper),
/// 2–3 ms a call. Our binds are mostly JSON row sets whose contents the planner cannot see anyway, and every
/// statement reads by key. A generic plan does not follow a table as it grows, so the connections also start with
/// `enable_seqscan = off`: every statement the store runs reads by key through an index, and a plan cached while
/// a table was nearly empty would otherwise keep scanning it whole once it has grown (seen: a claim planned on an
/// empty outbox took 0.4–3.8 s a call once the outbox held 50,000 rows). Measured with `pg_stat_statements`
/// (`track_planning`) at 2,000 events/s on 3 workers: planning went from 5.6 s to 0.9 s of PostgreSQL's time in a
/// 20 s run, with the row sets' size out of the SQL text (see `SQLRowSet.table`) and generic plans together.
final class PostgresStatementCache<Statement: Sendable>: Sendable {
    /// What to do with one statement.
    enum Step {
        /// Run it as a plain statement with binds.
        case direct
        /// Prepare it, then execute it.
        case prepare
        /// Execute this prepared statement.
        case execute(Statement)
    }

    /// Most statements prepared on one connection.
    static var capacity: Int { 200 }
    /// Runs of the same text on a connection before it is prepared there.
    static var usesBeforePreparing: Int { 3 }
    /// The session settings the worker's connections start with (see the type's comment).
    static var startupParameters: [(String, String)] {
        [("enable_seqscan", "off"), ("plan_cache_mode", "force_generic_plan")]
    }

    private struct Connection {
        var uses: [String: Int] = [:]
        var prepared: [String: Statement] = [:]
    }

    private struct State {
        var connections: [PostgresConnection.ID: Connection] = [:]
        /// Texts whose preparation failed: they always run as plain statements.
        var refused: Set<String> = []
    }

    private let state = Mutex(State())

    init() {}

    /// The key of a statement: its text and the types of its binds, or nil when it is not to be prepared: one
    /// without binds (`BEGIN`, `COMMIT`, schema changes), or one with a NULL bind (whose type is not known, so no
    /// cast can be written for it) or text with a NUL character (which PostgreSQL's text cannot hold: it runs
    /// plainly and fails there).
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

    /// Whether `text` has a NUL character, found with `memchr` over its UTF-8: a row set's JSON is kilobytes, and
    /// `text.utf8.contains(0)` had cost 1.6 % of a PostgreSQL worker's instructions.
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
            if let statement = entry.prepared[key] { return (.execute(statement), isNew) }
            if state.refused.contains(key) || entry.prepared.count >= Self.capacity { return (.direct, isNew) }
            let uses = (entry.uses[key] ?? 0) + 1
            if uses < Self.usesBeforePreparing {
                entry.uses[key] = uses
                return (.direct, isNew)
            }
            // Counted from zero again: until it is reported prepared, it runs plainly, never prepared twice at once.
            entry.uses[key] = nil
            return (.prepare, isNew)
        }
        if isNew { watch() }
        return step
    }

    /// `key` is prepared on `connection` as `statement`.
    func prepared(_ key: String, as statement: Statement, on connection: PostgresConnection.ID) {
        state.withLock { $0.connections[connection, default: Connection()].prepared[key] = statement }
    }

    /// The preparation of `key` failed: it runs as a plain statement from now on, on every connection.
    func refuse(_ key: String) {
        _ = state.withLock { $0.refused.insert(key) }
    }

    /// Forgets `connection` (closed, or its prepared statements are gone).
    func forget(_ connection: PostgresConnection.ID) {
        _ = state.withLock { $0.connections.removeValue(forKey: connection) }
    }

    /// `sql` with every parameter cast to its bind's type (`$2` of an `.int` bind is `($2::bigint)`), so that the
    /// server infers exactly those types when it prepares the text, and reads each value in the binary format
    /// ``PostgresExecutor`` sends. Parameters are found outside quoted literals and identifiers, comments and
    /// dollar-quoted bodies (a backslash in an escape string is not followed: the store's statements have none); a
    /// text without parameters comes back unchanged.
    static func typed(_ sql: String, _ binds: [SQLValue]) -> String {
        let bytes = Array(sql.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + binds.count * 12)
        var index = 0
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        /// A byte of an identifier or keyword: a letter (ASCII or not), a digit or `_`.
        func isWord(_ byte: UInt8) -> Bool {
            let lower = byte | 0x20
            return isDigit(byte) || (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")) || byte >= 0x80
                || byte == UInt8(ascii: "_")
        }
        /// Copies from `index` through the first `terminator` at or after `from` (or to the end).
        func copyThrough(_ terminator: [UInt8], from: Int) {
            var end = from
            while end < bytes.count {
                if bytes[end] == terminator[0], end + terminator.count <= bytes.count,
                    Array(bytes[end..<(end + terminator.count)]) == terminator
                {
                    end += terminator.count
                    output.append(contentsOf: bytes[index..<end])
                    index = end
                    return
                }
                end += 1
            }
            output.append(contentsOf: bytes[index...])
            index = bytes.count
        }
        while index < bytes.count {
            let byte = bytes[index]
            let next = index + 1 < bytes.count ? bytes[index + 1] : 0
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                // A doubled quote inside is two quoted runs in a row: the same result.
                copyThrough([byte], from: index + 1)
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                copyThrough([UInt8(ascii: "\n")], from: index + 2)
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                copyThrough(Array("*/".utf8), from: index + 2)
            case UInt8(ascii: "$") where isDigit(next) && (index == 0 || !isWord(bytes[index - 1])):
                var end = index + 1
                var number = 0
                while end < bytes.count, isDigit(bytes[end]) {
                    number = number * 10 + Int(bytes[end] - UInt8(ascii: "0"))
                    end += 1
                }
                guard number >= 1, number <= binds.count else {
                    output.append(contentsOf: bytes[index..<end])
                    index = end
                    continue
                }
                let type: String =
                    switch binds[number - 1] {
                    case .int: "bigint"
                    case .bool: "boolean"
                    case .text, .null: "text"
                    }
                output.append(contentsOf: Array("(".utf8) + bytes[index..<end] + Array("::\(type))".utf8))
                index = end
            case UInt8(ascii: "$") where index == 0 || !isWord(bytes[index - 1]):
                // A dollar-quoted body: `$tag$ … $tag$` (or `$$ … $$`).
                var end = index + 1
                while end < bytes.count, isWord(bytes[end]) { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: "$") else {
                    output.append(byte)
                    index += 1
                    continue
                }
                let tag = Array(bytes[index...end])
                copyThrough(tag, from: end + 1)
            default:
                output.append(byte)
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
