import BadgeCore
import BadgeWire

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
