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
