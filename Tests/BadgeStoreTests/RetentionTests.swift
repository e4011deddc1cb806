import BadgeCore
import BadgeWire
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

/// Retention deletes exactly what is read (or recorded) and old, and keeps everything a count depends on.
@Suite("Retention")
struct RetentionTests {
    /// The ids of one table's rows (column `id` of `query`), sorted.
    private func ids(_ store: any SQLBackedStore, _ query: String) async throws -> [String] {
        let database = (store as! any SQLBackedStore).sqlBackend.database
        return try await database.transaction { sql in
            try await sql.query(query, []).compactMap { try $0["id"].string }.sorted()
        }
    }

    /// The age of `time` (microseconds since the epoch) by this process's clock, which here is the database's.
    private func age(of time: Int64) -> Duration {
        .microseconds(Timestamp.now().microsecondsSinceEpoch - time)
    }

    /// Purges `kind` older than `age` batch by batch (`limit` rows each) until a batch finds less; returns the rows
    /// deleted.
    private func purgeAll(
        _ store: any SQLBackedStore, _ kind: RetentionKind, olderThan age: Duration
    ) async throws -> Int {
        var total = 0
        while true {
            let deleted = try await store.purge(kind, olderThan: age, limit: 1)
            total += deleted
            if deleted < 1 { return total }
        }
    }

    private func message(_ id: String, at seconds: Int64, conversation: String) -> Event {
        Event(
            id: id, type: .message, recipient: "u-alice", occurredAt: at(seconds), actor: bob,
            conversationID: conversation, messageID: "msg-\(id)", text: "hello")
    }

    /// A table that grew after the purge's plan was made (PostgreSQL, whose connections cache generic plans): a
    /// plan made while `processed_events` was empty used to run the batch's subquery again for every old row, so
    /// a purge over 400,000 old ids ran into the statement timeout and retention stopped for good.
    @Test func aPurgeOverATableThatGrewAfterItsPlanWasMadeStillCompletes() async throws {
        try await withStore(.postgres) { store in
            let database = (store as! any SQLBackedStore).sqlBackend.database
            try await database.transaction { try await $0.execute("ANALYZE processed_events", []) }
            // Prepared on its third run on a connection: enough runs that every connection has it.
            for _ in 0..<30 {
                #expect(try await store.purge(.processedEvents, olderThan: age(of: 1_000), limit: 500) == 0)
            }
            try await database.transaction {
                try await $0.execute(
                    "INSERT INTO processed_events (event_id, processed_at) "
                        + "SELECT 'old-' || g, g FROM generate_series(1, 400000) AS g", [])
            }
            #expect(try await store.purge(.processedEvents, olderThan: age(of: 500_000), limit: 500) == 500)
            #expect(try await store.purge(.processedEvents, olderThan: age(of: 500_000), limit: 500) == 500)
            let left = try await database.transaction {
                try await $0.query("SELECT count(*) AS n FROM processed_events WHERE event_id LIKE 'old-%'", [])
            }
            #expect(try left.first?["n"].int64 == 399_000)
        }
    }

    @Test(arguments: Backend.allCases)
    func deletesOnlyWhatIsReadOrRecordedAndOlderThanTheCutoff(backend: Backend) async throws {
        try await withStore(backend) { store in
            let events = [
                register("d1", token: tokenA),
                follow("n1", at: 1), follow("n2", at: 2), follow("n3", at: 100),
                Event(
                    id: "r1", type: .notificationRead, recipient: "u-alice", occurredAt: at(200),
                    notificationIDs: ["n1", "n3", "ghost"]),
                message("m1", at: 3, conversation: "c1"), message("m2", at: 4, conversation: "c1"),
                message("m3", at: 300, conversation: "c2"),
                Event(
                    id: "cr1", type: .conversationRead, recipient: "u-alice", occurredAt: at(5),
                    conversationID: "c1", until: at(5)),
            ]
            _ = try await store.apply(events, policy: .unseen)
            let before = try await store.snapshot(user: "u-alice")
            #expect(before.counts.unreadNotifications == 1)
            #expect(before.counts.unreadMessages == 1)
            let notifications = "SELECT id FROM notifications"
            let messages = "SELECT event_id AS id FROM messages"
            let tombstones = "SELECT notification_id AS id FROM read_tombstones"
            let processed = "SELECT event_id AS id FROM processed_events"
            #expect(try await ids(store, tombstones) == ["ghost"])

            // Events are 2026-11-21, recorded now: a cutoff at(50) finds the read notifications and messages that
            // happened before it, and no id or tombstone (recorded today).
            let between = age(of: at(50).microsecondsSinceEpoch)
            #expect(try await purgeAll(store, .readNotifications, olderThan: between) == 1)
            #expect(try await purgeAll(store, .readMessages, olderThan: between) == 2)
            #expect(try await purgeAll(store, .processedEvents, olderThan: between) == 0)
            #expect(try await purgeAll(store, .readTombstones, olderThan: between) == 0)
            #expect(try await ids(store, notifications) == ["n2", "n3"])
            #expect(try await ids(store, messages) == ["m3"])
            #expect(try await ids(store, processed).count == events.count)
            #expect(try await store.snapshot(user: "u-alice") == before)

            // Older than nothing (recorded before the database's now): every recorded id and tombstone goes, and the
            // read notification; the unread notification and message stay, with the counts.
            try await Task.sleep(for: .milliseconds(20))
            for kind in RetentionKind.allCases { _ = try await purgeAll(store, kind, olderThan: .zero) }
            #expect(try await ids(store, notifications) == ["n2"])
            #expect(try await ids(store, messages) == ["m3"])
            #expect(try await ids(store, tombstones).isEmpty)
            #expect(try await ids(store, processed).isEmpty)
            #expect(try await store.snapshot(user: "u-alice") == before)

            // The documented effect on idempotency: a duplicate older than the retention is a new event.
            let again = try await store.apply([follow("n1", at: 1)], policy: .unseen)
            #expect(again[0].duplicate == false)
            #expect(try await store.snapshot(user: "u-alice").counts.unreadNotifications == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func oneWorkerAtATimeHoldsTheMaintenanceLease(backend: Backend) async throws {
        try await withStore(backend) { store in
            #expect(try await store.maintenanceLease("retention", worker: "a", ttlMilliseconds: 60_000))
            #expect(try await !store.maintenanceLease("retention", worker: "b", ttlMilliseconds: 60_000))
            #expect(try await store.maintenanceLease("retention", worker: "a", ttlMilliseconds: 1))
            try await Task.sleep(for: .milliseconds(20))
            // Expired: the next worker takes it, and the first no longer has it.
            #expect(try await store.maintenanceLease("retention", worker: "b", ttlMilliseconds: 60_000))
            #expect(try await !store.maintenanceLease("retention", worker: "a", ttlMilliseconds: 60_000))
        }
    }
}
