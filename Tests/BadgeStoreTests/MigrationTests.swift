import BadgeCore
import BadgeSupport
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// A database a version-4 worker left behind (before retention and the device cap) is migrated in place, and the
/// store carries on from its state.
@Suite("Migrations of a populated database")
struct MigrationTests {
    @Test(arguments: Backend.allCases)
    func aPopulatedVersion4DatabaseMigratesAndTheStoreCarriesOnFromItsState(backend: Backend) async throws {
        try await withStores(backend, migrate: false) { stores in
            let store = stores[0]
            let database = store.sqlBackend.database
            let prelude = (store as? PostgresStore)?.schema.map { ["CREATE SCHEMA IF NOT EXISTS \"\($0)\""] } ?? []
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
            // Rows from before the migration count as made at its time, by the database's clock (here the same as
            // ours, a second's slack for SQLite's rounding): retention keeps them until they are old.
            let sinceBefore = Duration.microseconds(Timestamp.now().microsecondsSinceEpoch - before) + .seconds(1)
            #expect(try await store.purge(.processedEvents, olderThan: sinceBefore, limit: 100) == 0)
            #expect(try await store.purge(.readTombstones, olderThan: sinceBefore, limit: 100) == 0)
            let stamped = try await database.transaction { sql in
                try await sql.query(
                    "SELECT count(*) AS n FROM processed_events WHERE event_id IN ('d1', 'n1') AND processed_at >= $1",
                    [.int(before - 1_000_000)]
                ).first?["n"].int64
            }
            #expect(stamped == 2)
            // The device registered before the cap existed counts as registered at time 0: a second device is
            // added beside it, the older one kept within the cap.
            _ = try await store.apply([register("d2", token: tokenB, at: 5)], policy: .unseen)
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.token) == [tokenA, tokenB])
        }
    }

    /// A database upgraded by a newer badgepipe (a version above the latest this code knows) is refused with a clear,
    /// non-transient error, and nothing is applied.
    @Test(arguments: Backend.allCases)
    func aSchemaNewerThanTheCodeIsRefused(backend: Backend) async throws {
        try await withStores(backend) { stores in
            let store = stores[0]
            let database = store.sqlBackend.database
            let newer = Schema.latestVersion + 1
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)", [.int(newer)])
            }
            let error = await #expect(throws: StoreError.self) { try await store.migrate() }
            #expect(error?.code == .schemaTooNew)
            #expect(error?.transient == false)
            #expect(
                error?.message
                    == "the database schema is at version \(newer) and serves badgepipe from schema version "
                    + "\(newer); this badgepipe knows up to \(Schema.latestVersion): upgrade badgepipe")
            // A store on an older database carries on as before.
            try await database.transaction { sql in
                try await sql.execute("DELETE FROM schema_migrations WHERE version = $1", [.int(newer)])
            }
            try await store.migrate()
        }
    }

    /// A database a newer badgepipe migrated with versions that only add (an index) still serves this code: it
    /// starts and works against it (a rollback after an additive migration). A running store notices when a newer
    /// badgepipe then applies a version that does not serve it, and a start refuses it, naming both versions.
    @Test(arguments: Backend.allCases)
    func aSchemaThatOnlyGrewServesOlderCodeUntilAVersionThatDoesNot(backend: Backend) async throws {
        try await withStores(backend) { stores in
            let store = stores[0]
            let database = store.sqlBackend.database
            let latest = Schema.latestVersion
            let recorded = try await database.transaction { sql in
                try await sql.query("SELECT max(serves_from) AS requirement FROM schema_migrations", [])
            }
            let requirement = try #require(try recorded.first?["requirement"].int64)
            #expect(requirement <= latest, "this code's own versions serve it")
            // A newer badgepipe's additive version (an index): it records the requirement unchanged.
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO schema_migrations (version, applied_at, serves_from) VALUES ($1, 0, $2)",
                    [.int(latest + 1), .int(requirement)])
            }
            try await store.migrate()
            try await store.checkSchema()
            _ = try await store.apply([register("s-d1", token: tokenA, for: "u-schema")], policy: .unseen)
            #expect(try await store.snapshot(user: "u-schema").devices.map(\.token) == [tokenA])
            // Then a version that changes what code must do: the running store stops, and a start refuses.
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO schema_migrations (version, applied_at, serves_from) VALUES ($1, 0, $1)",
                    [.int(latest + 2)])
            }
            let running = await #expect(throws: StoreError.self) { try await store.checkSchema() }
            #expect(running?.code == .schemaTooNew)
            let starting = await #expect(throws: StoreError.self) { try await store.migrate() }
            #expect(starting?.code == .schemaTooNew)
            #expect(
                starting?.message
                    == "the database schema is at version \(latest + 2) and serves badgepipe from schema version "
                    + "\(latest + 2); this badgepipe knows up to \(latest): upgrade badgepipe")
        }
    }

    /// A database migrated by a badgepipe from before `serves_from` (the column missing, then added empty) gets, at
    /// the next start, what this code records for each version it knows: an additive version serves what the one
    /// before it served, not only code of its own version. A version it does not know, recorded without one, serves
    /// only code of its own version.
    @Test(arguments: Backend.allCases)
    func versionsRecordedBeforeServesFromAreFilledInAtTheNextStart(backend: Backend) async throws {
        try await withStores(backend) { stores in
            let store = stores[0]
            let database = store.sqlBackend.database
            let latest = Schema.latestVersion
            func servesFrom() async throws -> [Int64: Int64] {
                let rows = try await database.transaction { sql in
                    try await sql.query("SELECT version, serves_from FROM schema_migrations", [])
                }
                var result: [Int64: Int64] = [:]
                for row in rows { result[try #require(try row["version"].int64)] = try row["serves_from"].int64 }
                return result
            }
            let fresh = try await servesFrom()
            #expect(fresh.count == Schema.migrations.count)
            for migration in Schema.migrations {
                #expect(fresh[migration.version] == Schema.requirement(through: migration.version))
            }
            // An additive version serves the code the version before it served.
            for migration in Schema.migrations where migration.additive {
                #expect(
                    fresh[migration.version] == Schema.requirement(through: migration.version - 1),
                    "version \(migration.version)")
            }
            // As a badgepipe from before the column left it (it wrote no serves_from).
            try await database.transaction { sql in
                try await sql.execute("ALTER TABLE schema_migrations DROP COLUMN serves_from")
            }
            try await store.migrate()
            try await store.checkSchema()
            let filled = try await servesFrom()
            for migration in Schema.migrations {
                #expect(filled[migration.version] == fresh[migration.version], "version \(migration.version)")
            }
            // A newer badgepipe's version recorded without it serves only code of its own version.
            try await database.transaction { sql in
                try await sql.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)", [.int(latest + 1)])
            }
            let refused = await #expect(throws: StoreError.self) { try await store.migrate() }
            #expect(refused?.code == .schemaTooNew)
            await #expect(throws: StoreError.self) { try await store.checkSchema() }
        }
    }

    @Test func additiveVersionsKeepTheRequirementAndOthersRaiseIt() {
        let index = Schema.Migration(version: 20, additive: true) { _, _ in [] }
        let column = Schema.Migration(version: 21) { _, _ in [] }
        #expect(Schema.servesFrom(index, requirement: 8) == 8)
        #expect(Schema.servesFrom(column, requirement: 8) == 21)
        let latest = Schema.latestVersion
        #expect(Schema.compatibility([(1, 1), (latest, 8)]) == .current)
        #expect(Schema.compatibility([(latest, 8), (latest + 1, 8)]) == .newerButServed(newest: latest + 1))
        #expect(
            Schema.compatibility([(latest, 8), (latest + 1, latest + 1)])
                == .tooNew(newest: latest + 1, requires: latest + 1))
        // The schema's own migrations: versions 9 and 10 only add indexes.
        #expect(Schema.migrations.filter(\.additive).map(\.version).starts(with: [9, 10]))
    }

    /// On PostgreSQL the outbox's pages are filled to `Schema.outboxFillFactor` only (migration 12), so that a
    /// claim's update of a row stays on its page.
    @Test func theOutboxKeepsRoomOnItsPagesForTheClaimsUpdatesOnPostgres() async throws {
        try await withStores(.postgres) { stores in
            let rows = try await stores[0].sqlBackend.database.transaction { sql in
                try await sql.query(
                    "SELECT array_to_string(reloptions, ',') AS options FROM pg_class WHERE oid = 'outbox'::regclass",
                    [])
            }
            #expect(try rows.first?["options"].string == "fillfactor=\(Schema.outboxFillFactor)")
        }
    }

    /// On PostgreSQL a migration's DDL gives up after the lock timeout when another session holds the table (a
    /// long transaction), instead of queueing every other statement on the table behind it for as long as that
    /// transaction lasts; the failure is transient, nothing of the version is applied, and the migration succeeds
    /// once the table is free.
    @Test
    func aMigrationGivesUpOnALockedTableWithinTheLockTimeoutAndSucceedsOnceItIsFree() async throws {
        try await withStores(.postgres, count: 2, migrate: false) { stores in
            let store = try #require(stores[0] as? PostgresStore)
            let holder = try #require(stores[1] as? PostgresStore)
            let prelude = store.schema.map { ["CREATE SCHEMA IF NOT EXISTS \"\($0)\""] } ?? []
            try await Schema.migrate(store.database, prelude: prelude, through: 4)
            // Version 5 adds a column to processed_events: another session reads that table in a long transaction.
            let (locked, release) = (CloseSignal<Void>(), CloseSignal<Void>())
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await holder.database.transaction { sql in
                        try await sql.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
                        try await sql.execute("LOCK TABLE processed_events IN ACCESS SHARE MODE")
                        locked.resolve()
                        // Until released, 10 s at most (a migration that waited for the lock would be done then).
                        for _ in 0..<100 where !release.isResolved {
                            try await Task.sleep(for: .milliseconds(100))
                        }
                    }
                }
                _ = await locked.waitUnlessCancelled()
                let clock = ContinuousClock()
                let start = clock.now
                // A worker's write to the table, made while the migration waits for its lock, waits behind it.
                group.addTask {
                    try await Task.sleep(for: .milliseconds(500))
                    let writeStart = clock.now
                    try await store.database.transaction { sql in
                        try await sql.execute("INSERT INTO processed_events (event_id) VALUES ('during-migration')")
                    }
                    let blocked = clock.now - writeStart
                    #expect(blocked < Schema.lockTimeout + .seconds(1), "the write waited \(blocked)")
                }
                // Under an advisory lock of its own: another test's migration in this database would otherwise
                // hold the lock while its concurrent index build waits for the holder's transaction above.
                let error = await #expect(throws: StoreError.self) {
                    try await Schema.migrate(store.database, prelude: prelude, advisoryLockKey: 0x4261_6467_6554_6573)
                }
                let waited = clock.now - start
                #expect(error?.code == .sqlState("55P03"))
                #expect(error?.transient == true)
                #expect(waited >= Schema.lockTimeout - .milliseconds(50), "gave up after \(waited)")
                // Well before the holder lets go (10 s): it gave up on the lock rather than waiting for it. The margin
                // is for a loaded machine, where the suite's other tests share the server.
                #expect(waited < Schema.lockTimeout + .seconds(4), "gave up after \(waited)")
                #expect(try await versions(store) == [1, 2, 3, 4])
                release.resolve()
                try await group.waitForAll()
            }
            try await store.migrate()
            #expect(try await versions(store) == Schema.migrations.map(\.version))
            let row = try await store.database.statement(
                "SELECT count(*) AS n FROM processed_events WHERE event_id = 'during-migration' AND processed_at > 0",
                [])
            #expect(try row.first?["n"].int64 == 1)
        }
    }

    /// On PostgreSQL an index left invalid by an interrupted concurrent build is dropped and built again as the
    /// migration defines it.
    @Test
    func anInvalidIndexLeftByAnInterruptedBuildIsRebuilt() async throws {
        try await withStores(.postgres, migrate: false) { stores in
            let store = try #require(stores[0] as? PostgresStore)
            let prelude = store.schema.map { ["CREATE SCHEMA IF NOT EXISTS \"\($0)\""] } ?? []
            try await Schema.migrate(store.database, prelude: prelude, through: 4)
            // A failed concurrent build leaves its index behind, INVALID: here a unique one over duplicates, under the
            // name version 5 builds.
            _ = try await store.database.statement(
                "INSERT INTO notifications (user_id, id, occurred_at, read, seen) VALUES ('u', 'a', 1, TRUE, TRUE), "
                    + "('u', 'b', 1, TRUE, TRUE)", [])
            await #expect(throws: StoreError.self) {
                _ = try await store.database.statement(
                    "CREATE UNIQUE INDEX CONCURRENTLY notifications_read_occurred ON notifications (occurred_at)", [])
            }
            let query =
                "SELECT i.indisvalid AS valid, pg_get_indexdef(i.indexrelid) AS definition FROM pg_index i "
                + "WHERE i.indexrelid = to_regclass('notifications_read_occurred')"
            #expect(try await store.database.statement(query, []).first?["valid"].bool == false)
            try await store.migrate()
            let index = try #require(try await store.database.statement(query, []).first)
            #expect(try index["valid"].bool == true)
            let definition = try #require(try index["definition"].string)
            #expect(!definition.contains("UNIQUE"), "\(definition)")
            #expect(definition.hasSuffix("(occurred_at) WHERE read"), "\(definition)")
        }
    }

    private func versions(_ store: PostgresStore) async throws -> [Int64] {
        try await store.database.statement("SELECT version FROM schema_migrations ORDER BY version", []).map {
            try #require(try $0["version"].int64)
        }
    }
}
