/// Statements of one transaction whose rows the caller reads, sent together: selects, row-locking selects, and
/// inserts with `RETURNING`, none of which needs another's result to be written.
///
/// Each part declares the columns it returns (name and type) and is given as a function that writes its text and
/// adds its values to the statement's ``SQLBinds``. PostgreSQL runs all the parts as **one** statement, in one round trip: each part becomes a
/// materialised `WITH` query, and the main query reads them one after another (`UNION ALL`), so they run — and
/// take their row locks — in the order they were added. Their columns are carried in shared typed slots and given
/// back under each part's own names. SQLite runs the parts one after another.
///
/// PostgreSQL runs the parts with one snapshot: a part does not see what an earlier part wrote, and a row lock
/// a part waits for does not refresh what the other parts read. Parts must not depend on each other's writes.
struct SQLReadBatch {
    private struct Part {
        let columns: [(name: String, type: SQLRowSet.ColumnType)]
        let statement: (inout SQLBinds) -> String
    }

    private var parts: [Part] = []
    /// `WITH` queries every part may read (PostgreSQL only), ahead of the parts.
    private var prelude: ((inout SQLBinds) -> String)?
    /// On PostgreSQL, the parts from this index on run as a second statement (see ``startSecondStatement()``).
    private var secondFrom: Int?

    init() {}

    /// Puts the text `sql` writes (one or more `WITH` queries, `name AS (…)`, whose values it adds to the binds it
    /// is given) ahead of the parts on PostgreSQL, where every part may read them. Set before adding parts.
    mutating func setPrelude(_ sql: @escaping (inout SQLBinds) -> String) {
        precondition(parts.isEmpty, "the prelude comes before the parts")
        prelude = sql
    }

    /// Makes the parts added from now on a second statement on PostgreSQL, with a snapshot of its own, taken once
    /// the first statement has its row locks: for reads that must see what the writers those locks waited for
    /// committed. The prelude belongs to the first statement only.
    mutating func startSecondStatement() {
        precondition(secondFrom == nil, "a read batch has at most two statements")
        secondFrom = parts.count
    }

    /// Adds a part returning `columns`; `statement` writes the part's text and adds its values to the binds it is
    /// given (the statement's, which may hold other parts' values already). Returns the part's index in
    /// ``run(sql:)``'s result.
    @discardableResult
    mutating func add(
        columns: [(name: String, type: SQLRowSet.ColumnType)], _ statement: @escaping (inout SQLBinds) -> String
    ) -> Int {
        parts.append(Part(columns: columns, statement: statement))
        return parts.count - 1
    }

    var isEmpty: Bool { parts.isEmpty }

    /// Runs the parts; returns each part's rows, by part index, read by the part's column names.
    func run(sql: any SQLExecutor) async throws -> [[SQLRow]] {
        guard !parts.isEmpty else { return [] }
        switch sql.dialect {
        case .sqlite:
            var results: [[SQLRow]] = []
            for part in parts {
                var binds = SQLBinds()
                let statement = part.statement(&binds)
                results.append(try await sql.query(statement, binds.values))
            }
            return results
        case .postgres:
            let cut = secondFrom ?? parts.count
            var results: [[SQLRow]] = []
            for range in [0..<cut, cut..<parts.count] where !range.isEmpty {
                let (statement, binds) = postgresStatement(range)
                results += try split(try await sql.query(statement, binds), range)
            }
            return results
        }
    }

    /// The typed slots each part's columns take: per type, the part's n-th column of that type takes slot n.
    private static func slots(of columns: [(name: String, type: SQLRowSet.ColumnType)]) -> [String] {
        var counts: [SQLRowSet.ColumnType: Int] = [:]
        return columns.map { column in
            counts[column.type, default: 0] += 1
            return slotName(column.type, counts[column.type] ?? 0)
        }
    }

    private static func slotName(_ type: SQLRowSet.ColumnType, _ number: Int) -> String {
        switch type {
        case .text: return "t\(number)"
        case .int: return "i\(number)"
        case .bool: return "b\(number)"
        }
    }

    private static func sqlType(_ type: SQLRowSet.ColumnType) -> String {
        switch type {
        case .text: return "text"
        case .int: return "bigint"
        case .bool: return "boolean"
        }
    }

    /// The PostgreSQL statement of the parts in `range`, and its binds: `WITH [prelude,] r0 AS MATERIALIZED (…), …
    /// SELECT 0 AS bp, <slots> FROM r0 UNION ALL …` (the prelude when the range starts at the first part).
    func postgresStatement(_ range: Range<Int>) -> (sql: String, binds: [SQLValue]) {
        let types: [SQLRowSet.ColumnType] = [.text, .int, .bool]
        var widths: [SQLRowSet.ColumnType: Int] = [:]
        for part in parts[range] {
            for type in types {
                widths[type] = max(widths[type] ?? 0, part.columns.filter { $0.type == type }.count)
            }
        }
        var queries: [String] = []
        var binds = SQLBinds()
        if let prelude, range.lowerBound == 0 { queries.append(prelude(&binds)) }
        var branches: [String] = []
        for index in range {
            let part = parts[index]
            queries.append("r\(index) AS MATERIALIZED (\(part.statement(&binds)))")
            let taken = Dictionary(uniqueKeysWithValues: zip(Self.slots(of: part.columns), part.columns.map(\.name)))
            var cells = ["\(index) AS bp"]
            for type in types {
                for number in stride(from: 1, through: widths[type] ?? 0, by: 1) {
                    let slot = Self.slotName(type, number)
                    let value = taken[slot].map { "r\(index).\($0)" } ?? "NULL"
                    cells.append("\(value)::\(Self.sqlType(type)) AS \(slot)")
                }
            }
            branches.append("SELECT \(cells.joined(separator: ", ")) FROM r\(index)")
        }
        return (
            "WITH " + queries.joined(separator: ", ") + " " + branches.joined(separator: " UNION ALL "), binds.values
        )
    }

    /// A combined result's rows given back per part of `range`, under the part's own column names.
    private func split(_ rows: [SQLRow], _ range: Range<Int>) throws -> [[SQLRow]] {
        let layouts = parts.map { part in (SQLColumns(part.columns.map(\.name)), Self.slots(of: part.columns)) }
        var results = [[SQLRow]](repeating: [], count: parts.count)
        var positions: [[Int]?]? = nil
        for row in rows {
            // The slots' positions in the combined result, found once.
            if positions == nil {
                positions = try layouts.indices.map { index in
                    guard range.contains(index) else { return nil }
                    return try layouts[index].1.map { slot in
                        guard let position = row.columns.position(of: slot) else {
                            throw StoreError(
                                code: .missingColumn, message: "no slot \(slot) in a read batch's result",
                                transient: false)
                        }
                        return position
                    }
                }
            }
            guard let index = try row["bp"].int64.map(Int.init), range.contains(index),
                let slots = positions?[index] ?? nil
            else { throw StoreError.corrupt("a read batch row without its part") }
            results[index].append(SQLRow(columns: layouts[index].0, values: slots.map { row.values[$0] }))
        }
        return Array(results[range])
    }
}
