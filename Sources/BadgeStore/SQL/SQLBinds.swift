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
