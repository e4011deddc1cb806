import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("SQL write batches")
struct SQLWriteBatchTests {
    private func set(_ value: String) -> SQLRowSet {
        var set = SQLRowSet([("id", .text)])
        set.append([.text(value)])
        return set
    }

    @Test func postgresRunsEveryPartButTheLastAsAWithQueryReadingItsOwnPlaceholder() {
        let statement = SQLWriteBatch.statement(
            [
                { "INSERT INTO a SELECT id FROM \($0)" }, { "UPDATE b FROM \($0)" },
                { "INSERT INTO c FROM \($0) RETURNING id" },
            ],
            sets: [set("1"), set("2"), set("3")])
        let first = set("1").table("s", reading: "$1", dialect: .postgres)
        let second = set("2").table("s", reading: "$2", dialect: .postgres)
        let third = set("3").table("s", reading: "$3", dialect: .postgres)
        #expect(first.contains("$1") && second.contains("$2") && third.contains("$3"))
        #expect(statement.binds == [set("1").bind, set("2").bind, set("3").bind])
        #expect(
            statement.sql
                == "WITH w1 AS (INSERT INTO a SELECT id FROM \(first)), w2 AS (UPDATE b FROM \(second)) "
                + "INSERT INTO c FROM \(third) RETURNING id")
    }

    @Test func aSinglePartIsItsOwnStatement() {
        let statement = SQLWriteBatch.statement(
            [{ "DELETE FROM a WHERE id IN (SELECT id FROM \($0))" }], sets: [set("1")])
        #expect(statement.binds == [set("1").bind])
        #expect(
            statement.sql
                == "DELETE FROM a WHERE id IN (SELECT id FROM \(set("1").table("s", reading: "$1", dialect: .postgres)))"
        )
    }

    @Test func emptySetsAreLeftOut() {
        var batch = SQLWriteBatch()
        batch.add(SQLRowSet([("id", .text)])) { "DELETE FROM a WHERE id IN (SELECT id FROM \($0))" }
        #expect(batch.isEmpty)
        batch.add(set("1")) { "DELETE FROM a WHERE id IN (SELECT id FROM \($0))" }
        #expect(!batch.isEmpty)
    }
}
