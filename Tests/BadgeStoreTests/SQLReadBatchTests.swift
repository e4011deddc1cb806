import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("SQL read batches")
struct SQLReadBatchTests {
    private func set(_ values: [String]) -> SQLRowSet {
        var set = SQLRowSet([("id", .text)])
        for value in values { set.append([.text(value)]) }
        return set
    }

    @Test func postgresReadsEveryPartThroughTypedSlotsFromItsOwnPlaceholders() {
        var batch = SQLReadBatch()
        batch.setPrelude { "p AS MATERIALIZED (SELECT \($0.add(.int(7)))::bigint AS x)" }
        let a = set(["a"])
        let b = set(["b"])
        batch.add(columns: [("id", .text), ("n", .int)]) { "SELECT id, 1 AS n FROM \($0.add(a.bind))" }
        batch.add(columns: [("flag", .bool), ("id", .text), ("name", .text)]) {
            "SELECT true AS flag, id, id AS name FROM \($0.add(b.bind)) LIMIT \($0.add(.int(3)))"
        }
        let (sql, binds) = batch.postgresStatement(0..<2)
        #expect(binds == [.int(7), a.bind, b.bind, .int(3)])
        #expect(
            sql
                == "WITH p AS MATERIALIZED (SELECT $1::bigint AS x), r0 AS MATERIALIZED (SELECT id, 1 AS n FROM $2), "
                + "r1 AS MATERIALIZED (SELECT true AS flag, id, id AS name FROM $3 LIMIT $4) "
                + "SELECT 0 AS bp, r0.id::text AS t1, NULL::text AS t2, r0.n::bigint AS i1, NULL::boolean AS b1 "
                + "FROM r0 UNION ALL "
                + "SELECT 1 AS bp, r1.id::text AS t1, r1.name::text AS t2, NULL::bigint AS i1, r1.flag::boolean AS b1 "
                + "FROM r1")
    }

    @Test func aSecondStatementNumbersItsPlaceholdersFromOneWithoutThePrelude() {
        var batch = SQLReadBatch()
        batch.setPrelude { "p AS (SELECT \($0.add(.int(7)))::bigint AS x)" }
        batch.add(columns: [("id", .text)]) { "SELECT \($0.add(.text("a")))::text AS id" }
        batch.startSecondStatement()
        batch.add(columns: [("id", .text)]) { "SELECT \($0.add(.text("b")))::text AS id" }
        let second = batch.postgresStatement(1..<2)
        #expect(second.binds == [.text("b")])
        #expect(
            second.sql == "WITH r1 AS MATERIALIZED (SELECT $1::text AS id) SELECT 1 AS bp, r1.id::text AS t1 FROM r1")
    }

    /// On both backends: each part's rows come back under its own column names and types, NULLs and empty parts
    /// included, and the parts run in order (a part's row locks come before the next part's).
    @Test(arguments: Backend.allCases)
    func everyPartsRowsComeBackUnderItsOwnNames(backend: Backend) async throws {
        try await withStore(backend) { store in
            let database = store.sqlBackend.database
            let results = try await database.transaction { sql in
                try await sql.execute("INSERT INTO users (user_id, badge_version) VALUES ('u1', 5), ('u2', 9)")
                var batch = SQLReadBatch()
                var users = SQLRowSet([("user_id", .text)])
                for user in ["u1", "u2"] { users.append([.text(user)]) }
                let dialect = sql.dialect
                batch.add(columns: [("user_id", .text), ("badge_version", .int), ("badge_enabled", .bool)]) {
                    "SELECT user_id, badge_version, badge_enabled FROM users WHERE user_id IN (SELECT user_id FROM "
                        + "\(users.table("s", binds: &$0, dialect: dialect))) ORDER BY user_id" + dialect.forUpdate
                }
                batch.add(columns: [("absent", .text)]) {
                    "SELECT user_id AS absent FROM users WHERE user_id = \($0.add(.text("none")))"
                }
                batch.startSecondStatement()
                batch.add(columns: [("label", .text), ("missing", .int), ("twice", .int)]) {
                    "SELECT 'x' AS label, NULL AS missing, \($0.add(.int(21))) * 2 AS twice"
                }
                return try await batch.run(sql: sql)
            }
            #expect(results.count == 3)
            #expect(try results[0].map { try $0["user_id"].string } == ["u1", "u2"])
            #expect(try results[0].map { try $0["badge_version"].int64 } == [5, 9])
            #expect(try results[0].map { try $0["badge_enabled"].bool } == [true, true])
            #expect(results[1].isEmpty)
            #expect(try results[2].first?["label"].string == "x")
            #expect(try results[2].first?["missing"].isNull == true)
            #expect(try results[2].first?["twice"].int64 == 42)
        }
    }
}
