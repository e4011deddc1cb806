import BadgeCore
import BadgeWire
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

/// An alert's event is stored once per event (`outbox_events`), not once per device, and goes with the last outbox
/// row of the event, whatever removes it.
@Suite("Alert events stored once")
struct OutboxEventTests {
    static let tokens = (0..<5).map { String(format: "%02d", $0) + String(repeating: "e", count: 62) }

    static func comment(_ id: String, at seconds: Int64, quotes: Int = 2_000) -> Event {
        Event(
            id: id, type: .comment, recipient: "u-alice", occurredAt: at(seconds), actor: bob, postID: "p-1",
            commentID: "c-\(id)", text: String(repeating: "\"", count: quotes))
    }

    /// `outbox_events` rows, and outbox alert rows that carry their own `event_json`.
    static func stored(_ database: any SQLTransactor) async throws -> (events: Int, carrying: Int) {
        try await database.transaction { sql in
            let events = try await sql.query("SELECT count(*) AS n FROM outbox_events", []).first?["n"].int64
            let carrying = try await sql.query(
                "SELECT count(*) AS n FROM outbox WHERE event_json IS NOT NULL", []
            ).first?["n"].int64
            return (Int(events ?? -1), Int(carrying ?? -1))
        }
    }

    static func database(_ store: any SQLBackedStore) throws -> any SQLTransactor {
        store.sqlBackend.database
    }

    static func claim(
        _ store: any SQLBackedStore, lease: PartitionLease?, recording: DeliveryRecord = DeliveryRecord()
    ) async throws -> ClaimedPushes {
        try await store.claimPushes(
            partition: 0, limit: 256, policy: .unseen, lease: lease,
            skipClaimedBefore: nil, recording: recording)
    }

    static func lease(_ store: any SQLBackedStore, _ leased: Bool) async throws -> PartitionLease? {
        guard leased else { return nil }
        return try #require(
            try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: []).leases.first
        )
    }

    @Test(arguments: Backend.allCases, [false, true])
    func anAlertToFiveDevicesStoresItsEventOnceUntilItsLastRowIsRecorded(backend: Backend, leased: Bool) async throws {
        try await withStore(backend) { store in
            let database = try Self.database(store)
            let lease = try await Self.lease(store, leased)
            let context = ApplyContext(partition: 0, lease: lease)
            let registrations = Self.tokens.enumerated().map { register("d\($0.offset)", token: $0.element) }
            _ = try await store.apply(registrations, policy: .unseen, context: context)
            let comment = Self.comment("c1", at: 10)
            _ = try await store.apply([comment], policy: .unseen, context: context)

            // One row of the event, with its JSON, for five alert rows that carry none.
            #expect(try await Self.stored(database) == (1, 0))
            let json = try await database.transaction { sql in
                try await sql.query("SELECT event_id, event_json FROM outbox_events", []).first?["event_json"].string
            }
            #expect(json == String(decoding: comment.jsonData(), as: UTF8.self))
            let pending = try await store.pendingPushes(limit: 100).filter { $0.push.eventID == "c1" }
            #expect(pending.map(\.push.token) == Self.tokens)
            #expect(pending.allSatisfy { $0.push.kind == .alert(comment) })

            // Claimed: every alert carries the event.
            let claimed = try await Self.claim(store, lease: lease)
            let alerts = claimed.pushes.filter { $0.push.eventID == "c1" }
            #expect(alerts.map(\.push.token) == Self.tokens)
            #expect(alerts.allSatisfy { $0.push.kind == .alert(comment) })
            #expect(claimed.refused.isEmpty)

            // Four of five sent: the event stays for the fifth.
            let others = claimed.pushes.filter { $0.push.eventID != "c1" }.map(\.id)
            try await store.recordDeliveries(
                DeliveryRecord(sent: others + alerts.dropLast().map(\.id), dropped: claimed.dropped))
            #expect(try await Self.stored(database).events == 1)
            let last = try #require(alerts.last)
            let again = try await Self.claim(store, lease: lease)
            #expect(again.pushes.map(\.id) == [last.id])
            #expect(again.pushes.first?.push.kind == .alert(comment))

            // The fifth recorded with the next claim (one statement on PostgreSQL under a lease): the event goes.
            let after = try await Self.claim(store, lease: lease, recording: DeliveryRecord(sent: [last.id]))
            #expect(after.pushes.isEmpty)
            #expect(try await Self.stored(database).events == 0)
            #expect(try await store.pendingPushes(limit: 100).isEmpty)
        }
    }

    /// A dead token, a deactivated device and a push that failed for good each remove rows of the event; the event
    /// goes with the last of them. An event's rows refused by a claim (its stored JSON is not an event) take the
    /// event with them into `refused_pushes`.
    @Test(arguments: Backend.allCases)
    func everyWayOfRemovingTheLastRowRemovesTheEvent(backend: Backend) async throws {
        try await withStore(backend) { store in
            let database = try Self.database(store)
            let context = ApplyContext(partition: 0)
            let registrations = Self.tokens.prefix(3).enumerated().map { register("d\($0.offset)", token: $0.element) }
            _ = try await store.apply(registrations, policy: .unseen, context: context)
            let first = try await Self.claim(store, lease: nil)
            try await store.recordDeliveries(.sentAll(first))
            _ = try await store.apply([Self.comment("c1", at: 10)], policy: .unseen, context: context)
            #expect(try await Self.stored(database) == (1, 0))

            let rows = try await store.pendingPushes(limit: 100)
            #expect(rows.map(\.push.token) == Array(Self.tokens.prefix(3)))
            try await store.recordDeliveries(DeliveryRecord(deadTokens: [Self.tokens[0]]))
            #expect(try await Self.stored(database).events == 1)
            try await store.recordDeliveries(DeliveryRecord(deadTokens: [Self.tokens[1]]))
            #expect(try await Self.stored(database).events == 1)
            try await store.recordDeliveries(DeliveryRecord(failed: [rows[2].id]))
            #expect(try await Self.stored(database).events == 0)

            // Refused: the stored event is not an event any more (its alerts to the three active devices).
            _ = try await store.apply(
                [register("d9", token: Self.tokens[3]), register("d10", token: Self.tokens[4])], policy: .unseen,
                context: context)
            let registered = try await Self.claim(store, lease: nil)
            try await store.recordDeliveries(.sentAll(registered))
            _ = try await store.apply([Self.comment("c2", at: 20)], policy: .unseen, context: context)
            try await database.transaction { sql in
                try await sql.execute("UPDATE outbox_events SET event_json = '{not json' WHERE event_id = 'c2'")
            }
            let refusing = try await Self.claim(store, lease: nil)
            #expect(refusing.pushes.isEmpty)
            #expect(refusing.refused.map(\.reason) == [.badEvent, .badEvent, .badEvent])
            #expect(try await Self.stored(database).events == 0)
            let kept = try await database.transaction { sql in
                try await sql.query("SELECT outbox_row FROM refused_pushes ORDER BY outbox_id", []).map {
                    try JSONValue.parse(try #require(try $0["outbox_row"].string))
                }
            }
            #expect(kept.map { $0["event_json"]?.stringValue } == ["{not json", "{not json", "{not json"])
        }
    }

    /// Two transactions removing an event's last two rows at once (on PostgreSQL each sees the other's row until it
    /// commits): the second waits for the first's lock on the event and then sees its row gone, so the event's row
    /// does not outlive them.
    @Test func twoTransactionsRemovingTheLastTwoRowsAtOnceRemoveTheEvent() async throws {
        try await withStore(.postgres) { store in
            let database = try Self.database(store)
            let context = ApplyContext(partition: 0)
            let registrations = Self.tokens.prefix(2).enumerated().map { register("d\($0.offset)", token: $0.element) }
            _ = try await store.apply(registrations, policy: .unseen, context: context)
            let first = try await Self.claim(store, lease: nil)
            try await store.recordDeliveries(.sentAll(first))
            _ = try await store.apply([Self.comment("c1", at: 10)], policy: .unseen, context: context)
            let rows = try await store.pendingPushes(limit: 100).map(\.id)
            #expect(rows.count == 2)

            let (deleted, deletedOne) = AsyncStream<Void>.makeStream()
            async let slow: Void = database.transaction { sql in
                try await sql.execute("DELETE FROM outbox WHERE id = $1", [.int(rows[0])])
                deletedOne.yield()
                // Still open while the other removes the second row.
                try await Task.sleep(for: .milliseconds(500))
            }
            var iterator = deleted.makeAsyncIterator()
            await iterator.next()
            try await store.recordDeliveries(DeliveryRecord(sent: [rows[1]]))
            try await slow
            #expect(try await Self.stored(database) == (0, 0))
            #expect(try await store.pendingPushes(limit: 100).isEmpty)
        }
    }

    /// A database with alerts queued by a version that kept the event on each outbox row: after the migration, those
    /// rows are read from their own `event_json` and go out as planned, beside new alerts stored once.
    @Test(arguments: Backend.allCases)
    func alertsQueuedBeforeTheMigrationStillGoOut(backend: Backend) async throws {
        try await withStores(backend, migrate: false) { stores in
            let store = stores[0]
            let database = try Self.database(store)
            let prelude = (store as? PostgresStore)?.schema.map { ["CREATE SCHEMA IF NOT EXISTS \"\($0)\""] } ?? []
            try await Schema.migrate(database, prelude: prelude, through: 6)
            let old = Self.comment("c0", at: 5)
            let oldJSON = String(decoding: old.jsonData(), as: UTF8.self)
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO users (user_id, unread_notifications, unseen_notifications, badge_version) "
                        + "VALUES ('u-alice', 1, 1, 3)")
                for (index, token) in Self.tokens.prefix(2).enumerated() {
                    try await sql.execute(
                        "INSERT INTO devices (token, user_id, provider, topic, environment, active, pushed_version, "
                            + "registered_at) VALUES ($1, 'u-alice', 'apns', 'com.example.app', 'production', TRUE, "
                            + "\(index), 0)",
                        [.text(token)])
                    try await sql.execute(
                        """
                        INSERT INTO outbox (user_id, event_id, event_type, token, provider, topic, environment, kind,
                            event_json, unread_notifications, unseen_notifications, unread_messages, badge,
                            badge_version, previews, partition_id, created_at)
                        VALUES ('u-alice', 'c0', 'comment', $1, 'apns', 'com.example.app', 'production', 'alert', $2,
                            1, 1, 0, 1, 3, TRUE, 0, 0)
                        """, [.text(token), .text(oldJSON)])
                }
                try await sql.execute("INSERT INTO processed_events (event_id, processed_at) VALUES ('c0', 0)")
            }
            try await store.migrate()
            let context = ApplyContext(partition: 0)
            let new = Self.comment("c1", at: 10)
            _ = try await store.apply([new], policy: .unseen, context: context)
            #expect(try await Self.stored(database) == (1, 2))

            let claimed = try await Self.claim(store, lease: nil)
            #expect(claimed.refused.isEmpty)
            #expect(claimed.pushes.map(\.push.eventID) == ["c0", "c0", "c1", "c1"])
            #expect(claimed.pushes.prefix(2).allSatisfy { $0.push.kind == .alert(old) })
            #expect(claimed.pushes.suffix(2).allSatisfy { $0.push.kind == .alert(new) })
            try await store.recordDeliveries(.sentAll(claimed))
            #expect(try await Self.stored(database) == (0, 0))
        }
    }
}
