/// The column names of one statement's result and their positions. When two columns share a name, the first
/// one is found.
struct SQLColumns: Sendable {
    /// The names, in select-list order.
    let names: [String]
    private let positions: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var positions: [String: Int] = [:]
        positions.reserveCapacity(names.count)
        for (position, name) in names.enumerated() where positions[name] == nil {
            positions[name] = position
        }
        self.positions = positions
    }

    var count: Int { names.count }

    /// Where column `name` is, or nil when the result has no such column.
    func position(of name: String) -> Int? {
        positions[name]
    }
}
