/// A value bound to, or read from, an SQL statement.
enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case bool(Bool)

    /// The value for an optional integer.
    static func int(_ value: Int64?) -> SQLValue {
        value.map { .int($0) } ?? .null
    }

    /// The value for an optional string.
    static func text(_ value: String?) -> SQLValue {
        value.map { .text($0) } ?? .null
    }

    var int64: Int64? {
        switch self {
        case .int(let value): return value
        case .bool(let value): return value ? 1 : 0
        case .text(let value): return Int64(value)
        case .null: return nil
        }
    }

    var string: String? {
        switch self {
        case .text(let value): return value
        case .int(let value): return String(value)
        case .bool(let value): return String(value)
        case .null: return nil
        }
    }

    /// Booleans are integers 0/1 in SQLite and `boolean` in PostgreSQL.
    var bool: Bool? {
        switch self {
        case .bool(let value): return value
        case .int(let value): return value != 0
        case .text(let value): return value == "t" || value == "true" || value == "1"
        case .null: return nil
        }
    }

    var isNull: Bool { self == .null }
}
