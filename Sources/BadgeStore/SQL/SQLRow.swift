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
