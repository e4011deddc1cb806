import BadgeCore
import BadgeWire
import Testing

@testable import BadgeStore

/// A database a version-4 worker left behind (before retention and the device cap) is migrated in place, and the
/// store carries on from its state.
@Suite("Migrations of a populated database")
struct MigrationTests {
    @Test(arguments: Backend.allCases)
    func aPopulatedVersion4DatabaseMigratesAndTheStoreCarriesOnFromItsState(backend: Backend) async throws {
        try await withStores(backend, migrate: false) { stores in
            let store = stores[0]
            let database = try #require((store as? any SQLBackedBadgeStore)?.sqlBackend.database)
            let prelude = (store as? PostgresBadgeStore)?.schema.map { ["CREATE SCHEMA IF NOT EXISTS \"\($0)\""] } ?? []
            try await Schema.migrate(database, prelude: prelude, through: 4)
            // What a version-4 worker wrote after `register("d1")` and `follow("n1")`, and a read notification n0
            // whose read arrived before it (a tombstone).
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO users (user_id, unread_notifications, unseen_notifications, badge_version) "
                        + "VALUES ('u-alice', 1, 1, 2)")
                try await sql.execute(
                    "INSERT INTO notifications (user_id, id, occurred_at, read, seen) VALUES ('u-alice', 'n1', $1, "
                        + "FALSE, FALSE)",
                    [.int(at(1).microsecondsSinceEpoch)])
                try await sql.execute(
                    "INSERT INTO devices (token, user_id, provider, topic, environment, active, pushed_version) "
                        + "VALUES ($1, 'u-alice', 'apns', 'com.example.app', 'production', TRUE, 2)",
                    [.text(tokenA)])
                try await sql.execute("INSERT INTO processed_events (event_id) VALUES ('d1'), ('n1')")
                try await sql.execute("INSERT INTO read_tombstones (user_id, notification_id) VALUES ('u-alice', 'n0')")
            }
            let before = Timestamp.now().microsecondsSinceEpoch
            try await store.migrate()
            let versions = try await database.transaction { sql in
                try await sql.query("SELECT version FROM schema_migrations ORDER BY version", []).map {
                    try $0["version"].int64
                }
            }
            #expect(versions == Schema.migrations.map(\.version))

            let snapshot = try await store.snapshot(user: "u-alice")
            #expect(snapshot.counts.unreadNotifications == 1)
            #expect(snapshot.badgeVersion == 2)
            #expect(snapshot.devices.map(\.token) == [tokenA])
            // Event ids recorded before the migration still count as processed.
            let again = try await store.apply([follow("n1", at: 1)], policy: .unseen)
            #expect(again.map(\.duplicate) == [true])
            // The tombstone still holds: n0 arrives read.
            let late = try await store.apply([follow("n0", at: 0), follow("n2", at: 2)], policy: .unseen)
            #expect(pushes(late).last?.badge == 2)
            #expect((pushes(late).last?.badgeVersion ?? 0) > 2)
            #expect(pushes(late).allSatisfy { $0.token == tokenA })
            #expect(try await store.snapshot(user: "u-alice").counts.unreadNotifications == 2)
            // Rows from before the migration count as made at its time: retention keeps them until they are old.
            #expect(try await store.purge(.processedEvents, olderThan: before, limit: 100) == 0)
            #expect(try await store.purge(.readTombstones, olderThan: before, limit: 100) == 0)
            let stamped = try await database.transaction { sql in
                try await sql.query(
                    "SELECT count(*) AS n FROM processed_events WHERE event_id IN ('d1', 'n1') AND processed_at >= $1",
                    [.int(before)]
                ).first?["n"].int64
            }
            #expect(stamped == 2)
            // The device registered before the cap existed counts as registered at time 0: a second device is
            // added beside it, the older one kept within the cap.
            _ = try await store.apply([register("d2", token: tokenB, at: 5)], policy: .unseen)
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.token) == [tokenA, tokenB])
        }
    }
}
