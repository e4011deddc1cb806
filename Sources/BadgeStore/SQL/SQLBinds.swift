/// The values bound to one statement and their placeholders, numbered as they are added: the one way a statement
/// of this module numbers its `$N`s (PostgreSQL's form; SQLite reads it too).
///
/// ```swift
/// var binds = SQLBinds()
/// let statement = "SELECT 1 FROM devices WHERE token = \(binds.add(.text(token)))"
///     + " AND user_id = \(binds.add(.text(user)))"  // "... token = $1 AND user_id = $2"
/// try await sql.query(statement, binds.values)
/// ```
struct SQLBinds: Sendable, Equatable {
    /// The values added so far; the one at index `i` is `$(i + 1)`.
    private(set) var values: [SQLValue] = []

    /// Creates an empty list: the first value added is `$1`.
    init() {}

    /// Adds `value` and returns its placeholder, `$N` where N is how many values there are now.
    mutating func add(_ value: SQLValue) -> String {
        values.append(value)
        return "$\(values.count)"
    }

    /// Adds each of `values` in order and returns their placeholders joined by `", "` (a `VALUES` row, an `IN`
    /// list); an empty string for no values.
    mutating func add(_ values: [SQLValue]) -> String {
        values.map { add($0) }.joined(separator: ", ")
    }
}
