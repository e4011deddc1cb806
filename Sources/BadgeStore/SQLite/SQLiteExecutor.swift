import NIOCore
import SQLiteNIO

/// Runs statements on the SQLite connection. Placeholders `$N` become SQLite's numbered `?N`.
struct SQLiteExecutor: SQLExecutor {
    let connection: SQLiteConnection

    var dialect: SQLDialect { .sqlite }

    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        let data: [SQLiteData] = binds.map { value in
            switch value {
            case .null: return .null
            case .int(let value): return .integer(SQLiteInt64(value))
            case .text(let value): return .text(value)
            case .bool(let value): return .integer(value ? 1 : 0)
            }
        }
        let rows = try await connection.query(Self.numberedPlaceholders(sql), data)
        guard let first = rows.first else { return [] }
        // Every row of a result has the same columns: their names are read once.
        let columns = SQLColumns(first.columns.map(\.name))
        return rows.map { row in
            SQLRow(
                columns: columns,
                values: row.columns.map { column in
                    switch column.data {
                    case .integer(let value): return .int(Int64(value))
                    case .float(let value): return .int(Int64(value))
                    case .text(let value): return .text(value)
                    case .blob(let buffer): return .text(String(decoding: buffer.readableBytesView, as: UTF8.self))
                    case .null: return .null
                    }
                })
        }
    }

    /// Rewrites `$12` to `?12`: a `$` followed by a digit. Any other `$` (JSON paths such as `'$[0]'`) stays.
    ///
    /// Over the UTF-8 bytes (`$` and the digits are ASCII, and no multi-byte sequence contains an ASCII byte): every
    /// SQLite statement passes here, and going character by character (grapheme breaking, an append each) costs
    /// far more per statement than going over its bytes.
    static func numberedPlaceholders(_ sql: String) -> String {
        var bytes = Array(sql.utf8)
        var changed = false
        var index = bytes.startIndex
        while index < bytes.endIndex - 1 {
            if bytes[index] == UInt8(ascii: "$"), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1]) {
                bytes[index] = UInt8(ascii: "?")
                changed = true
            }
            index += 1
        }
        return changed ? String(decoding: bytes, as: UTF8.self) : sql
    }
}
