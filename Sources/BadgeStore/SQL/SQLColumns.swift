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
