import Logging
import PostgresNIO

/// Runs statements on one leased connection.
struct PostgresExecutor: SQLExecutor {
    let connection: PostgresConnection
    let logger: Logger

    var dialect: SQLDialect { .postgres }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
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
