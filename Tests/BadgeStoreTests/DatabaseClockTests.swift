import BadgeCore
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// The store keeps time by the database's clock only: workers hand it durations (a retry's delay, retention's
/// age, a lease's term) and read ages back, so that workers whose clocks disagree agree on what is due and what is
/// old. (That a worker's clock really plays no part is the fleet test with a clock 10 minutes off; here, the
/// durations go in and come out as the database counts them.)
@Suite("The database's clock")
struct DatabaseClockTests {
    /// `expression` (`{now}` is the database's time in microseconds) over the rows of `from`, one value per row.
    private func values(
        _ store: any SQLBackedStore, _ expression: String, from: String
    ) async throws -> [Int64] {
        let database = (store as! any SQLBackedStore).sqlBackend.database
        let now = FleetQueries.statementNow(database.dialect)
        return try await database.transaction { sql in
            try await sql.query(
                "SELECT \(expression.replacingOccurrences(of: "{now}", with: now)) AS v FROM \(from)", []
            ).compactMap { try $0["v"].int64 }
        }
    }

    /// Runs `statement` (`{now}` is the database's time in microseconds).
    private func execute(_ store: any SQLBackedStore, _ statement: String) async throws {
        let database = (store as! any SQLBackedStore).sqlBackend.database
        let now = FleetQueries.statementNow(database.dialect)
        try await database.transaction { try await $0.execute(statement.replacingOccurrences(of: "{now}", with: now)) }
    }

    private func claim(
        _ store: any SQLBackedStore, recording: DeliveryRecord = DeliveryRecord()
    ) async throws
        -> ClaimedPushes
    {
        try await store.claimPushes(
            partition: 0, limit: 100, policy: .unseen, lease: nil, skipClaimedBefore: nil, recording: recording)
    }

    @Test(arguments: Backend.allCases)
    func aRetryIsDueItsDelayAfterItIsRecordedAndAgesAreTheDatabases(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [
                    register("d1", token: tokenA), register("d2", token: tokenB, for: "u-carol"),
                    follow("n1", at: 1), follow("n2", at: 2, to: "u-carol"),
                ], policy: .unseen, context: ApplyContext(partition: 0))
            // Planned just now by the database's clock (the events themselves are from 2026-11-21).
            let planned = try await values(store, "{now} - created_at", from: "outbox")
            #expect(!planned.isEmpty && planned.allSatisfy { $0 >= 0 && $0 < 5_000_000 }, "\(planned)")

            let first = try await claim(store)
            #expect(first.pushes.map(\.push.eventID) == ["n1", "n2"])
            for push in first.pushes {
                let age = try #require(push.outbox.age)
                #expect(age >= .zero && age < .seconds(5))
            }
            let alice = try #require(first.pushes.first { $0.push.token == tokenA })
            let carol = try #require(first.pushes.first { $0.push.token == tokenB })
            func retry(_ push: ClaimedPush, _ delay: Duration) -> DeliveryRecord.Retry {
                DeliveryRecord.Retry(id: push.id, delay: delay)
            }
            try await store.recordDeliveries(
                DeliveryRecord(
                    dropped: first.dropped, retries: [retry(alice, .seconds(3600)), retry(carol, .microseconds(1))]))
            // Due an hour after the record by the database's clock, and the other at once.
            let waits = try await values(
                store, "next_attempt_at - {now}", from: "outbox WHERE token = '\(tokenA)' ORDER BY id")
            #expect(waits.count == 1 && waits.allSatisfy { $0 > 3_595_000_000 && $0 <= 3_600_000_000 }, "\(waits)")
            try await Task.sleep(for: .milliseconds(5))
            let second = try await claim(store)
            #expect(second.pushes.map(\.push.eventID) == ["n2"])
            #expect(second.pushes.first?.outbox.attempts == 1)

            // Two hours old by the database's clock: the claim says so, and so does the backlog.
            try await execute(
                store, "UPDATE outbox SET created_at = created_at - 7200000000, next_attempt_at = {now}")
            let old = try await claim(store, recording: .sentAll(second))
            #expect(old.pushes.map(\.push.eventID) == ["n1"])
            let age = try #require(old.pushes.first?.outbox.age)
            #expect(age >= .seconds(7200) && age < .seconds(7205), "\(age)")
            let backlog = try await store.outboxBacklog(partitions: [0])
            let oldest = try #require(backlog.first?.oldestAge)
            #expect(oldest >= .seconds(7200) && oldest < .seconds(7205), "\(oldest)")
            #expect(backlog.first?.depth == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func retentionAndItsLeaseCountFromTheDatabasesNow(backend: Backend) async throws {
        try await withStore(backend) { store in
            try await execute(
                store,
                "INSERT INTO processed_events (event_id, processed_at) VALUES ('two-hours', {now} - 7200000000), "
                    + "('one-minute', {now} - 60000000)")
            #expect(try await store.purge(.processedEvents, olderThan: .seconds(3 * 3600), limit: 10) == 0)
            #expect(try await store.purge(.processedEvents, olderThan: .seconds(3600), limit: 10) == 1)
            #expect(try await values(store, "1", from: "processed_events").count == 1)

            #expect(try await store.maintenanceLease("retention", worker: "a", ttlMilliseconds: 60_000))
            let term = try await values(store, "expires_at - {now}", from: "maintenance_leases")
            #expect(term.count == 1 && term.allSatisfy { $0 > 55_000_000 && $0 <= 60_000_000 }, "\(term)")
            // Expired by the database's clock: the next worker takes it.
            try await execute(store, "UPDATE maintenance_leases SET expires_at = {now} - 1")
            #expect(try await store.maintenanceLease("retention", worker: "b", ttlMilliseconds: 60_000))
        }
    }
}
