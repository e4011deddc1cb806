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

/// The values bound to one statement and their placeholders, numbered as they are added: the one way a statement
/// of this module numbers its `$N`s (PostgreSQL's form; SQLite reads it too).
///
/// ```swift
/// var binds = SQLBinds()
/// let statement = "SELECT 1 FROM devices WHERE token = \(binds.add(.text(token)))"
///     + " AND user_id = \(binds.add(.text(user)))"  // "… token = $1 AND user_id = $2"
/// try await sql.query(statement, binds.values)
/// ```
///
/// A value is numbered where it is added, so the text and the values cannot drift apart however the statement is
/// assembled (optional parts, parts of a batch written by different functions).
struct SQLBinds: Sendable, Equatable {
    /// The values added so far, in placeholder order: the one at index `i` is `$(i + 1 + offset)`.
    private(set) var values: [SQLValue] = []
    /// How many placeholders come before the first value added here.
    private let offset: Int

    /// Creates an empty list: the first value added is `$1`.
    init() {
        offset = 0
    }

    /// Creates an empty list for the tail of a statement whose first `count` placeholders are numbered elsewhere:
    /// the first value added is `$(count + 1)`, and ``values`` holds only the values added here.
    init(following count: Int) {
        precondition(count >= 0, "a placeholder count is never negative")
        offset = count
    }

    /// Adds `value` and returns its placeholder, `$N`.
    mutating func add(_ value: SQLValue) -> String {
        values.append(value)
        return "$\(offset + values.count)"
    }

    /// Adds each of `values` in order and returns their placeholders joined by `", "` (a `VALUES` row, an `IN`
    /// list); an empty string for no values.
    mutating func add(_ values: [SQLValue]) -> String {
        values.map { add($0) }.joined(separator: ", ")
    }
}

/// One row of a statement's result, read by column name: the select list's names (`SELECT token, …`, the
/// column's own name for `t.token`) or their `AS` aliases (`SELECT count(*) AS depth`).
///
/// The names are read once per result (``SQLColumns``) and shared by its rows. A name the statement does not
/// return is a mistake in the code, not in the data: it throws ``StoreError/Code/missingColumn``.
struct SQLRow: Sendable {
    /// The result's column names, shared by its rows.
    let columns: SQLColumns
    /// The cells, in select-list order.
    let values: [SQLValue]

    init(columns: SQLColumns, values: [SQLValue]) {
        precondition(columns.count == values.count, "a row has one value per column")
        self.columns = columns
        self.values = values
    }

    /// The value of column `name`.
    subscript(_ name: String) -> SQLValue {
        get throws {
            guard let position = columns.position(of: name) else {
                throw StoreError(
                    code: .missingColumn,
                    message: "no column \(name) in the result (columns: \(columns.names.joined(separator: ", ")))",
                    transient: false)
            }
            return values[position]
        }
    }
}

/// The column names of one statement's result, in select-list order. When two columns share a name, the first
/// one is found.
///
/// A lookup scans the names: results have at most a few dozen columns, so a scan is about as fast per row as a
/// hash lookup, and no dictionary has to be built for each result.
struct SQLColumns: Sendable {
    /// The names, in select-list order.
    let names: [String]

    init(_ names: [String]) {
        self.names = names
    }

    var count: Int { names.count }

    /// Where column `name` is, or nil when the result has no such column. Names of another length are passed over
    /// without comparing them (a native string knows its UTF-8 length): every cell read looks a column up, and
    /// comparing strings is what such a lookup costs.
    func position(of name: String) -> Int? {
        let length = name.utf8.count
        return names.firstIndex { $0.utf8.count == length && $0 == name }
    }
}
