import Testing

@testable import BadgeStore

@Suite("SQL binds")
struct SQLBindsTests {
    @Test func placeholdersAreNumberedInTheOrderTheirValuesAreAdded() {
        var binds = SQLBinds()
        #expect(binds.values.isEmpty)
        #expect(binds.add(.text("a")) == "$1")
        #expect(binds.add(.int(7)) == "$2")
        #expect(binds.add(.null) == "$3")
        #expect(binds.values == [.text("a"), .int(7), .null])
    }

    @Test func aListOfValuesTakesTheNextPlaceholdersJoinedByCommas() {
        var binds = SQLBinds()
        _ = binds.add(.bool(true))
        #expect(binds.add([.int(1), .int(2), .text("x")]) == "$2, $3, $4")
        #expect(binds.add([]) == "")
        #expect(binds.add(.int(5)) == "$5")
        #expect(binds.values == [.bool(true), .int(1), .int(2), .text("x"), .int(5)])
    }

    @Test func sqliteReadsEveryNumberedPlaceholderAndNothingElse() {
        #expect(SQLiteExecutor.numberedPlaceholders("SELECT $1, $12 WHERE a = $3") == "SELECT ?1, ?12 WHERE a = ?3")
        #expect(
            SQLiteExecutor.numberedPlaceholders("json_extract(v, '$[0]') = $2 AND x = 'é$' || '$a' || $")
                == "json_extract(v, '$[0]') = ?2 AND x = 'é$' || '$a' || $")
        #expect(SQLiteExecutor.numberedPlaceholders("ü$1€$9") == "ü?1€?9")
        #expect(SQLiteExecutor.numberedPlaceholders("") == "")
        #expect(SQLiteExecutor.numberedPlaceholders("$") == "$")
        #expect(SQLiteExecutor.numberedPlaceholders("$$1") == "$?1")
    }

    @Test func aTailFollowingOtherPlaceholdersHoldsOnlyItsOwnValues() {
        var binds = SQLBinds(following: 3)
        #expect(binds.add(.text("w")) == "$4")
        #expect(binds.add([.int(1), .int(2)]) == "$5, $6")
        #expect(binds.values == [.text("w"), .int(1), .int(2)])
    }

    @Test func aStatementAssembledInPiecesKeepsTextAndValuesTogether() {
        // Optional parts added or not: each value's number is where it went in.
        for (partition, limit) in [(Int64?.some(3), Int64(10)), (nil, 20)] {
            var binds = SQLBinds()
            let filter = partition.map { "WHERE partition_id = \(binds.add(.int($0))) " } ?? ""
            let statement = "SELECT id FROM outbox \(filter)ORDER BY id LIMIT \(binds.add(.int(limit)))"
            if let partition {
                #expect(statement == "SELECT id FROM outbox WHERE partition_id = $1 ORDER BY id LIMIT $2")
                #expect(binds.values == [.int(partition), .int(limit)])
            } else {
                #expect(statement == "SELECT id FROM outbox ORDER BY id LIMIT $1")
                #expect(binds.values == [.int(limit)])
            }
        }
    }
}

@Suite("Lease checks folded into a statement")
struct LeaseQueryTests {
    @Test func aSingleLeaseReadsItsPartitionOwnerAndEpochFromTheNextPlaceholders() {
        let lease = PartitionLease(partition: 3, epoch: 9, worker: "w1")
        var binds = SQLBinds()
        _ = binds.add(.text("earlier"))
        let query = FleetQueries.leaseQuery(lease, binds: &binds)
        #expect(query.contains("partition_id = $2 AND owner = $3 AND epoch = $4"))
        #expect(binds.values == [.text("earlier"), .int(3), .text("w1"), .int(9)])
    }

    @Test func severalLeasesBindTheOwnerOnceAndEachPartitionWithItsEpochInPartitionOrder() {
        let leases = [
            PartitionLease(partition: 5, epoch: 2, worker: "w1"), PartitionLease(partition: 1, epoch: 7, worker: "w1"),
        ]
        var binds = SQLBinds()
        let query = FleetQueries.leaseQuery(leases, binds: &binds)
        #expect(
            query.contains(
                "WHERE owner = $1 AND (partition_id, epoch) IN (($2::bigint, $3::bigint), ($4::bigint, $5::bigint))"))
        #expect(binds.values == [.text("w1"), .int(1), .int(7), .int(5), .int(2)])
    }
}
