import BadgeCore
import BadgeWire

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

/// Set-based write statements of one transaction, sent together.
///
/// Each part is a statement over one ``SQLRowSet``, given as a function of the set's derived table (the text
/// ``SQLRowSet/table(_:bind:dialect:)`` makes). PostgreSQL runs all the parts as **one** statement: every part but
/// the last becomes a data-modifying `WITH` query of the last, each reading its own set from its own placeholder.
/// That is one round trip, one parse and one plan instead of one per part, which is most of what a small batch
/// costs. SQLite runs the parts one after another (in process, a statement costs no round trip; SQLite has no
/// data-modifying `WITH`).
///
/// PostgreSQL runs the `WITH` parts with one snapshot and in no defined order, so parts must not read what another
/// part writes, nor change a row another part changes. The batch writes of ``EventRules`` satisfy both: each part
/// writes its own table, or (an insert and an update of one table) rows the other does not touch.
struct SQLWriteBatch {
    private var parts: [(statement: (String) -> String, set: SQLRowSet, name: String?)] = []

    init() {}

    /// Whether there is nothing to write.
    var isEmpty: Bool { parts.isEmpty }

    /// Adds `statement` over `set`; a statement over an empty set is left out.
    mutating func add(_ set: SQLRowSet, _ statement: @escaping (String) -> String) {
        guard !set.isEmpty else { return }
        parts.append((statement, set, nil))
    }

    /// Adds `statement` over `set` as a part that later parts read by `name` (its `RETURNING` rows, on PostgreSQL:
    /// reading them is what orders the two). A statement over an empty set is left out.
    mutating func add(_ set: SQLRowSet, as name: String, _ statement: @escaping (String) -> String) {
        guard !set.isEmpty else { return }
        parts.append((statement, set, name))
    }

    /// Runs the parts and returns the rows of the last one (its `RETURNING`, if any).
    func run(sql: any SQLExecutor) async throws -> [SQLRow] {
        guard let last = parts.last else { return [] }
        switch sql.dialect {
        case .sqlite:
            for part in parts.dropLast() {
                var binds = SQLBinds()
                let statement = part.statement(part.set.table("s", binds: &binds, dialect: .sqlite))
                try await sql.execute(statement, binds.values)
            }
            var binds = SQLBinds()
            let statement = last.statement(last.set.table("s", binds: &binds, dialect: .sqlite))
            return try await sql.query(statement, binds.values)
        case .postgres:
            let (statement, binds) = Self.statement(
                parts.map(\.statement), sets: parts.map(\.set), names: parts.map(\.name))
            return try await sql.query(statement, binds)
        }
    }

    /// The one PostgreSQL statement for `statements` over `sets` (placeholder `$n` reads the set of part `n`), and
    /// its binds; a part is the `WITH` query `names[n]`, or `wn` when that is nil.
    static func statement(
        _ statements: [(String) -> String], sets: [SQLRowSet], names: [String?] = []
    ) -> (sql: String, binds: [SQLValue]) {
        var binds = SQLBinds()
        let texts = zip(statements, sets).map { statement, set in
            statement(set.table("s", binds: &binds, dialect: .postgres))
        }
        guard texts.count > 1, let last = texts.last else { return (texts.first ?? "", binds.values) }
        let prefix = texts.dropLast().enumerated().map { index, text in
            "\((index < names.count ? names[index] : nil) ?? "w\(index + 1)") AS (\(text))"
        }
        return ("WITH " + prefix.joined(separator: ", ") + " " + last, binds.values)
    }
}

/// Many rows handed to one statement as a single bind: a JSON array of row arrays, read back as a table with
/// typed columns (`jsonb_array_elements` on PostgreSQL, `json_each` on SQLite). This is what keeps a batch's
/// statement count constant: a statement over a row set costs one round trip however many rows it carries. On
/// PostgreSQL its SQL text does not depend on the row count (see `table`).
///
/// Column values are `SQLValue`s (`NULL` included). Each table also has an `ord` column: the row's position,
/// for statements that must keep the rows' order (outbox ids are assigned in planning order).
struct SQLRowSet {
    /// The SQL type a column is read back as.
    enum ColumnType {
        case text
        case int
        case bool
    }

    let columns: [(name: String, type: ColumnType)]
    private(set) var count = 0
    private var json: [UInt8] = [UInt8(ascii: "[")]

    init(_ columns: [(name: String, type: ColumnType)]) {
        self.columns = columns
    }

    var isEmpty: Bool { count == 0 }

    /// Adds a row: one value per column, in column order.
    mutating func append(_ row: [SQLValue]) {
        precondition(row.count == columns.count, "a row set row has one value per column")
        if count > 0 { json.append(UInt8(ascii: ",")) }
        json.append(UInt8(ascii: "["))
        for (index, value) in row.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            switch value {
            case .null: json.append(contentsOf: "null".utf8)
            case .int(let number): json.append(contentsOf: String(number).utf8)
            case .bool(let flag): json.append(contentsOf: (flag ? "true" : "false").utf8)
            case .text(let text): json.append(contentsOf: JSONValue.string(text).serialized())
            }
        }
        json.append(UInt8(ascii: "]"))
        count += 1
    }

    /// The rows as the one bind value of the statement.
    var bind: SQLValue {
        // Written straight into the string: `json + "]"` then `String(decoding:)` would hold the rows three times at
        // once (a batch of 128 alerts of 40 KB events is 10 MB of rows).
        .text(
            String(unsafeUninitializedCapacity: json.count + 1) { buffer in
                let written = buffer.initialize(fromContentsOf: json)
                buffer[written] = UInt8(ascii: "]")
                return written + 1
            })
    }

    /// A derived table `alias` with the set's columns (and `ord`), reading the rows from the set's ``bind``, which
    /// it adds to `binds`.
    func table(_ alias: String, binds: inout SQLBinds, dialect: SQLDialect) -> String {
        table(alias, reading: binds.add(bind), dialect: dialect)
    }

    /// ``table(_:binds:dialect:)`` reading the rows from `placeholder`, the set's ``bind`` added to a statement's
    /// ``SQLBinds`` once (a statement that reads the set more than once binds it once).
    func table(_ alias: String, reading placeholder: String, dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres:
            let cells = columns.enumerated().map { position, column in
                let type: String
                switch column.type {
                case .text: type = "text"
                case .int: type = "bigint"
                case .bool: type = "boolean"
                }
                return "(e.v->>\(position))::\(type) AS \(column.name)"
            }
            // The LIMIT (the array's own length, so it drops nothing) is for the planner, which otherwise takes any
            // set-returning function for 100 rows: joined with a small table, 100 rows look cheaper by a hash join
            // over a sequential scan than by index lookups, so each batch of a few events would scan whole tables,
            // at a cost that grows with them. A plan made for the bind's value folds it to the exact count; a
            // generic plan takes a LIMIT it cannot fold for a tenth of the rows, 10. It is an expression of the
            // bind, not a literal, so that the SQL text never depends on the batch's size and one prepared
            // statement serves every size (see `PostgresStatementCache`). With the count as a literal (even rounded
            // up to a power of two), each part of a statement would multiply its texts by up to nine, and the
            // ingestion statements would run mostly unprepared.
            // The bind is read as `jsonb`, parsed once into a binary form; as `json`, every `->>` would parse its
            // row's text again from the start.
            return "(SELECT \(cells.joined(separator: ", ")), e.n AS ord "
                + "FROM jsonb_array_elements(\(placeholder)::jsonb) WITH ORDINALITY AS e(v, n) "
                + "LIMIT jsonb_array_length(\(placeholder)::jsonb)) AS \(alias)"
        case .sqlite:
            let cells = columns.enumerated().map { position, column in
                "json_extract(e.value, '$[\(position)]') AS \(column.name)"
            }
            return
                "(SELECT \(cells.joined(separator: ", ")), e.key AS ord FROM json_each(\(placeholder)) AS e) AS \(alias)"
        }
    }

    /// A `FROM` clause joining the set (as `alias`, read from `placeholder`, see ``table(_:reading:dialect:)``) to `table` (as `tableAlias`) row by row where `condition`
    /// holds; `columns` are the table's columns the statement reads (`tableAlias.column`, …).
    ///
    /// On PostgreSQL a `LATERAL` subquery, so each row of the set is one index lookup whatever the statistics
    /// say: with a plain join, statistics taken while a partial index was empty (every stored notification read)
    /// make the planner scan that whole index once it has filled up, at a cost that grows with the notifications
    /// stored. On SQLite, whose planner already drives such joins from the small side, a plain join.
    func joinEach(
        _ alias: String, reading placeholder: String, dialect: SQLDialect, table: String, as tableAlias: String,
        columns: String, on condition: String, limit: SQLRowLimit? = nil
    ) -> String {
        let source = self.table(alias, reading: placeholder, dialect: dialect)
        switch dialect {
        case .postgres:
            // OFFSET 0 keeps the subquery a subquery: the planner flattens a plain one into the join, after which
            // it may reorder it and scan the index whole again. A LIMIT does the same.
            let tail = limit.map { "ORDER BY \($0.orderBy) LIMIT \($0.count)" } ?? "OFFSET 0"
            return "\(source) CROSS JOIN LATERAL (SELECT \(columns) FROM \(table) \(tableAlias) WHERE \(condition) "
                + "\(tail)) \(tableAlias)"
        case .sqlite:
            guard let limit else { return "\(source) JOIN \(table) \(tableAlias) ON \(condition)" }
            // SQLite has no LATERAL: the rows of each source row are numbered, and the first `count` kept.
            return "(SELECT \(columns), row_number() OVER (PARTITION BY \(limit.per) ORDER BY \(limit.orderBy)) AS rn "
                + "FROM \(source) JOIN \(table) \(tableAlias) ON \(condition)) \(tableAlias) WHERE \(tableAlias).rn <= "
                + "\(limit.count)"
        }
    }
}

/// At most `count` rows per source row of ``SQLRowSet/joinEach(_:reading:dialect:table:as:columns:on:limit:)``, the
/// first by `orderBy`; `per` names the source row's key columns (SQLite numbers the rows per key).
struct SQLRowLimit {
    var count: Int
    var orderBy: String
    var per: String
}
