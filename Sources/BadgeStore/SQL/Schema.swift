import BadgeCore
import BadgeSupport

/// The schema, as numbered migrations applied in order and recorded in `schema_migrations` (one row per version
/// applied, with the time it was applied).
///
/// **Versions.** `migrate` first reads the versions applied. Each version records in `schema_migrations.serves_from`
/// the oldest code it still serves: the version itself for a migration that changes what code must do, the
/// previous requirement for one that only adds (an index, a column with a default that older code may ignore; see
/// ``Migration/additive``). A database with a version above ``latestVersion`` was upgraded by a newer badgepipe:
/// when every version it has still serves this code (``compatibility(_:)``) the code runs against it, applying
/// nothing (a rollback after an additive migration); otherwise it refuses to touch it and fails with
/// `schema_too_new` (not transient: only an upgrade of badgepipe helps), which ends a worker's start with that
/// message. A running worker checks again every so often (``checkCompatibility(_:)``) and stops writing when a newer
/// badgepipe moved the schema past it.
///
/// **How a version is applied.** On SQLite, everything missing is applied in one `BEGIN IMMEDIATE` transaction
/// (other processes wait for it; SQLite has no concurrent index builds). On PostgreSQL, a migration must never hold
/// a lock that blocks the workers' reads and writes for more than a few seconds, however large the tables:
/// - the run holds a session-level advisory lock (``advisoryLockKey``) on one connection from start to end, so
///   concurrent migrators (workers starting together) take turns, and a later one finds the versions applied. It
///   is taken with `pg_try_advisory_lock`, tried again every ``advisoryLockPoll``: a statement waiting for it would
///   be an open transaction, which a concurrent index build of the holder waits for (a deadlock);
/// - a version's ``Step/ddl(_:)`` statements run in a transaction that starts with `SET LOCAL lock_timeout`
///   (``lockTimeout``): a statement that would wait longer than that for a table lock (a long transaction of
///   another session holds the table) gives up, the transaction rolls back, and the failure is transient
///   (`sqlstate_55P03`): the worker tries the migration again later. While a DDL statement waits for its lock,
///   every other session's statements on that table queue behind it; the timeout bounds that wait;
/// - a ``Step/index(_:on:)`` on an existing table is built with `CREATE INDEX CONCURRENTLY IF NOT EXISTS`, outside
///   any transaction and without a statement timeout: writes to the table go on during the build. An index left
///   `INVALID` by an interrupted build (a crash, a cancelled statement) is dropped (`DROP INDEX CONCURRENTLY`) and
///   built again;
/// - consecutive DDL statements share a transaction; the version's row is inserted in its last transaction, after
///   every index of the version is built. A version cut short between two of its transactions is applied again
///   from its first step at the next run, so on PostgreSQL each step of a version with more than one transaction
///   is written to be run again (`IF NOT EXISTS`, `IF EXISTS`, see ``SQLDialect/addColumn``).
///
/// Versions already recorded are never run again: changing how a version runs (its steps' order, concurrent
/// index builds) changes nothing for a database that has it.
enum Schema {
    struct Migration: Sendable {
        var version: Int64
        /// Whether code older than this version runs correctly against a database that has it: the migration only
        /// adds what older code does not use (indexes; columns with defaults it never needs to write). Such a
        /// version raises no requirement; any other raises it to itself.
        var additive = false
        /// The version's steps on a dialect, given the database's time when the run began (microseconds since the
        /// epoch: a migration that stamps existing rows stamps them with the database's clock, never the
        /// migrating worker's).
        var steps: @Sendable (SQLDialect, _ now: Int64) -> [Step]
    }

    /// One step of a migration.
    enum Step: Sendable, Equatable {
        /// A statement run in a transaction (on PostgreSQL under ``lockTimeout``).
        case ddl(String)
        /// An index `name` `ON` `definition` (`table (columns) [WHERE …]`) of a table that may already be large: built
        /// concurrently on PostgreSQL, in the version's transaction on SQLite.
        case index(_ name: String, on: String)
    }

    /// The key of the PostgreSQL advisory lock that serialises concurrent migrations ("BadgePip").
    static let advisoryLockKey: Int64 = 0x4261_6467_6550_6970

    /// How often a PostgreSQL migrator tries the advisory lock while another one holds it.
    static let advisoryLockPoll: Duration = .milliseconds(250)

    /// How long a PostgreSQL migration's DDL statement may wait for a table lock before it gives up (and the
    /// migration is retried).
    static let lockTimeout: Duration = .seconds(3)

    static let migrations: [Migration] = [
        // The tables and their first indexes, all new: one transaction on both backends.
        Migration(version: 1) { dialect, _ in
            [
                """
                CREATE TABLE users (
                    user_id TEXT PRIMARY KEY,
                    unread_notifications BIGINT NOT NULL DEFAULT 0,
                    unseen_notifications BIGINT NOT NULL DEFAULT 0,
                    unread_messages BIGINT NOT NULL DEFAULT 0,
                    badge_version BIGINT NOT NULL DEFAULT 0,
                    badge_enabled BOOLEAN NOT NULL DEFAULT TRUE,
                    previews BOOLEAN NOT NULL DEFAULT TRUE,
                    read_all_until BIGINT,
                    opened_until BIGINT
                )
                """,
                """
                CREATE TABLE notifications (
                    user_id TEXT NOT NULL,
                    id TEXT NOT NULL,
                    occurred_at BIGINT NOT NULL,
                    read BOOLEAN NOT NULL,
                    seen BOOLEAN NOT NULL,
                    PRIMARY KEY (user_id, id)
                )
                """,
                "CREATE INDEX notifications_unread ON notifications (user_id, occurred_at) WHERE NOT read",
                """
                CREATE INDEX notifications_unseen ON notifications (user_id, occurred_at)
                WHERE NOT read AND NOT seen
                """,
                """
                CREATE TABLE read_tombstones (
                    user_id TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    PRIMARY KEY (user_id, notification_id)
                )
                """,
                """
                CREATE TABLE messages (
                    user_id TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    occurred_at BIGINT NOT NULL,
                    read BOOLEAN NOT NULL,
                    PRIMARY KEY (user_id, event_id)
                )
                """,
                "CREATE INDEX messages_unread ON messages (user_id, conversation_id, occurred_at) WHERE NOT read",
                """
                CREATE TABLE conversation_watermarks (
                    user_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    read_until BIGINT NOT NULL,
                    PRIMARY KEY (user_id, conversation_id)
                )
                """,
                """
                CREATE TABLE devices (
                    token TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    topic TEXT,
                    environment TEXT,
                    active BOOLEAN NOT NULL DEFAULT TRUE
                )
                """,
                "CREATE INDEX devices_active_user ON devices (user_id) WHERE active",
                "CREATE TABLE processed_events (event_id TEXT PRIMARY KEY)",
                """
                CREATE TABLE outbox (
                    id \(dialect.autoIncrementPrimaryKey),
                    user_id TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    event_type TEXT NOT NULL,
                    token TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    topic TEXT,
                    environment TEXT,
                    kind TEXT NOT NULL,
                    event_json TEXT,
                    unread_notifications BIGINT NOT NULL,
                    unseen_notifications BIGINT NOT NULL,
                    unread_messages BIGINT NOT NULL,
                    badge BIGINT NOT NULL,
                    badge_version BIGINT NOT NULL,
                    previews BOOLEAN NOT NULL
                )
                """,
                "CREATE INDEX outbox_token ON outbox (token)",
            ].map(Step.ddl)
        },
        // Fleets: partition leases with fencing epochs, the live workers, the partition of each outbox row, and
        // the newest badge_version pushed to each device (the guard against stale pushes from a zombie worker).
        Migration(version: 2) { dialect, _ in
            [
                .ddl("ALTER TABLE outbox \(dialect.addColumn) partition_id BIGINT"),
                .ddl("ALTER TABLE devices \(dialect.addColumn) pushed_version BIGINT NOT NULL DEFAULT -1"),
                .ddl(
                    """
                    CREATE TABLE IF NOT EXISTS partition_leases (
                        partition_id BIGINT PRIMARY KEY,
                        owner TEXT,
                        epoch BIGINT NOT NULL DEFAULT 0,
                        expires_at BIGINT NOT NULL DEFAULT 0
                    )
                    """),
                .ddl(
                    "CREATE TABLE IF NOT EXISTS fleet_workers (worker_id TEXT PRIMARY KEY, last_seen BIGINT NOT NULL)"),
                .index("outbox_partition", on: "outbox (partition_id, id)"),
            ]
        },
        // Fleets: the lease epoch under which an outbox row was claimed for sending. A partition's new owner gives
        // rows claimed under an earlier epoch (possibly sent, not yet recorded) time to be recorded by their
        // claimer before it sends them again.
        Migration(version: 3) { _, _ in
            [.ddl("ALTER TABLE outbox ADD COLUMN claimed_epoch BIGINT")]
        },
        // The delivery stage: each outbox row has its own retry schedule (next attempt, attempts so far) and the
        // time it was planned (for giving up after a configurable age); a device's pushes are taken in id order
        // (outbox_token_id, built before the index it replaces goes), and a row waiting for its next attempt holds
        // back the later rows of its token.
        Migration(version: 4) { dialect, _ in
            [
                .ddl("ALTER TABLE outbox \(dialect.addColumn) created_at BIGINT NOT NULL DEFAULT 0"),
                .ddl("ALTER TABLE outbox \(dialect.addColumn) attempts BIGINT NOT NULL DEFAULT 0"),
                .ddl("ALTER TABLE outbox \(dialect.addColumn) next_attempt_at BIGINT NOT NULL DEFAULT 0"),
                .index("outbox_token_id", on: "outbox (token, id)"),
                .ddl("DROP INDEX IF EXISTS outbox_token"),
            ]
        },
        // Retention (see `RetentionKind`): when an event id was recorded and a read tombstone made (rows from
        // before read as made now, the migration's time), indexes to find what is old, and the maintenance lease
        // that lets one worker of a fleet do the deleting. Devices: when each was registered (its event's
        // occurred_at): the cap on devices per user drops the one registered longest ago.
        Migration(version: 5) { dialect, now in
            [
                .ddl("ALTER TABLE processed_events \(dialect.addColumn) processed_at BIGINT NOT NULL DEFAULT \(now)"),
                .ddl("ALTER TABLE read_tombstones \(dialect.addColumn) created_at BIGINT NOT NULL DEFAULT \(now)"),
                .ddl("ALTER TABLE devices \(dialect.addColumn) registered_at BIGINT NOT NULL DEFAULT 0"),
                .ddl(
                    """
                    CREATE TABLE IF NOT EXISTS maintenance_leases (
                        name TEXT PRIMARY KEY,
                        owner TEXT,
                        expires_at BIGINT NOT NULL DEFAULT 0
                    )
                    """),
                .index("processed_events_processed_at", on: "processed_events (processed_at)"),
                .index("read_tombstones_created_at", on: "read_tombstones (created_at)"),
                .index("notifications_read_occurred", on: "notifications (occurred_at) WHERE read"),
                .index("messages_read_occurred", on: "messages (occurred_at) WHERE read"),
            ]
        },
        // Refused pushes (see `RefusedPush`): outbox rows the code could not read, moved aside by the claim that met
        // them, with every column as text, the reason and the database's time.
        Migration(version: 6) { _, _ in
            [
                .ddl(
                    """
                    CREATE TABLE IF NOT EXISTS refused_pushes (
                        outbox_id BIGINT PRIMARY KEY,
                        user_id TEXT,
                        token TEXT,
                        partition_id BIGINT,
                        reason TEXT NOT NULL,
                        detail TEXT NOT NULL,
                        outbox_row TEXT NOT NULL,
                        refused_at BIGINT NOT NULL
                    )
                    """)
            ]
        },
        // An alert's event stored once per event (see `OutboxEvents`): `outbox_events` holds the JSON, the alert rows
        // of the outbox name it by `event_id` (their `event_json` stays NULL; rows written before keep theirs and
        // are read as they are until they are gone). The index finds an event's alert rows; the trigger deletes
        // the event's row with its last alert row, whatever deletes it.
        Migration(version: 7) { dialect, _ in
            [
                .ddl(
                    """
                    CREATE TABLE IF NOT EXISTS outbox_events (
                        event_id TEXT PRIMARY KEY,
                        event_json TEXT NOT NULL,
                        created_at BIGINT NOT NULL
                    )
                    """),
                .index("outbox_alert_event", on: "outbox (event_id) WHERE kind = 'alert'"),
            ] + OutboxEvents.releaseTrigger(dialect).map(Step.ddl)
        },
        // Token feedback (see `TokenFeedback`): each token a provider called dead, written with its deactivation and
        // deleted once published to the feedback exchange (`taken_until`: a publisher's hold on it, by the database's
        // clock). `devices.unregistered_at`: the provider's time of the token's death (APNs's 410 timestamp, in
        // microseconds), before which a registration does not reactivate it. `app` of devices and outbox rows: the
        // device's `device.app` (contract v1.1), NULL when it named none.
        Migration(version: 8) { dialect, _ in
            [
                .ddl(
                    """
                    CREATE TABLE IF NOT EXISTS token_feedback (
                        id \(dialect.autoIncrementPrimaryKey),
                        token TEXT NOT NULL,
                        provider TEXT NOT NULL,
                        app TEXT,
                        reason TEXT NOT NULL,
                        provider_timestamp BIGINT,
                        recorded_at BIGINT NOT NULL,
                        taken_until BIGINT NOT NULL DEFAULT 0
                    )
                    """),
                .ddl("ALTER TABLE devices \(dialect.addColumn) unregistered_at BIGINT"),
                .ddl("ALTER TABLE devices \(dialect.addColumn) app TEXT"),
                .ddl("ALTER TABLE outbox \(dialect.addColumn) app TEXT"),
            ]
        },
        // The delivery claim's queue heads (see `DeliveryQueries.dueIDs`): the devices with queued rows in a
        // partition, one index descent each, and each device's oldest rows, whatever one device holds.
        Migration(version: 9, additive: true) { _, _ in
            [.index("outbox_partition_token", on: "outbox (partition_id, token, id)")]
        },
        // The delivery claim's two sources of queue heads (see `DeliveryQueries.dueIDs`): the devices of a
        // partition with rows never attempted, and the rows waiting for a retry by when they are due, so that a
        // device whose only rows wait for a retry costs a claim nothing until it is due.
        Migration(version: 10, additive: true) { _, _ in
            [
                .index("outbox_partition_fresh", on: "outbox (partition_id, token, id) WHERE attempts = 0"),
                .index("outbox_partition_retry", on: "outbox (partition_id, next_attempt_at) WHERE attempts > 0"),
            ]
        },
        // The app's reads (`AppReads`): each new notification keeps its event's JSON (for the list's type, actor,
        // post and text; NULL for those stored before) and when it was stored by the database's clock (the stream's
        // order of new notifications; 0 before), with an index for the list newest first and one for the unread by
        // storage order. Older code ignores both columns.
        Migration(version: 11, additive: true) { dialect, _ in
            [
                .ddl("ALTER TABLE notifications \(dialect.addColumn) event_json TEXT"),
                .ddl("ALTER TABLE notifications \(dialect.addColumn) stored_at BIGINT NOT NULL DEFAULT 0"),
                .index("notifications_newest", on: "notifications (user_id, occurred_at, id)"),
                .index("notifications_unread_stored", on: "notifications (user_id, stored_at) WHERE NOT read"),
            ]
        },
        // PostgreSQL: the outbox's pages filled to half (`outboxFillFactor`), so that a claim's update of a row
        // (its `claimed_epoch`, in no index) finds room on the row's own page and is a heap-only tuple. A page that
        // ingestion fills to the brim leaves none, and then each claimed push writes a new entry into every index
        // of the outbox (docs/performance.md, *The outbox's pages half full*). Pages already full keep their rows
        // until they are removed. SQLite has no such setting.
        Migration(version: 12, additive: true) { dialect, _ in
            dialect == .postgres ? [.ddl("ALTER TABLE outbox SET (fillfactor = \(outboxFillFactor))")] : []
        },
    ]

    /// The share of an outbox page (percent) that inserts fill on PostgreSQL; the rest is kept for the claims'
    /// updates of the same rows (see migration 12).
    static let outboxFillFactor = 50

    /// Applies the missing migrations, up to and including `through` (all by default; tests build older schemas
    /// with it), as the type's comment describes; fails with `schema_too_new` when the database has a version
    /// above ``latestVersion``. `prelude` runs first, after the advisory lock on PostgreSQL (e.g. creating the
    /// configured schema). The advisory lock is one for the whole database (``advisoryLockKey``); a test that times
    /// a migration passes a key of its own, so that the other tests' migrations in the same database do not hold
    /// it up.
    static func migrate(
        _ database: any SQLTransactor, prelude: [String] = [], through: Int64 = .max,
        lockTimeout: Duration = Schema.lockTimeout, advisoryLockKey: Int64 = Schema.advisoryLockKey
    ) async throws {
        if let postgres = database as? PostgresTransactor {
            try await postgres.session { sql in
                try await migratePostgres(
                    sql, prelude: prelude, through: through, lockTimeout: lockTimeout, advisoryLockKey: advisoryLockKey)
            }
            return
        }
        try await database.transaction { sql in
            for statement in prelude {
                try await sql.execute(statement)
            }
            let applied = try await appliedVersions(sql)
            let missing = try await missing(applied, through: through, sql: sql)
            let now = missing.isEmpty ? 0 : try await databaseNow(sql)
            for migration in missing {
                for step in migration.steps(sql.dialect, now) {
                    switch step {
                    case .ddl(let statement): try await sql.execute(statement)
                    case .index(let name, let definition):
                        try await sql.execute("CREATE INDEX IF NOT EXISTS \(name) ON \(definition)")
                    }
                }
                try await record(migration, sql: sql)
            }
        }
    }

    /// The PostgreSQL run, on one session outside any transaction (see the type's comment).
    private static func migratePostgres(
        _ sql: any SQLExecutor, prelude: [String], through: Int64, lockTimeout: Duration, advisoryLockKey: Int64
    ) async throws {
        // Index builds over large tables take as long as they take; waiting for another migrator too.
        try await sql.execute("SET statement_timeout = 0")
        var locked = false
        // The statements that take and give back the lock bind its key alone.
        var key = SQLBinds()
        let lockKey = key.add(.int(advisoryLockKey))
        do {
            // Polled, never waited for in a statement: a session waiting for the lock would be a transaction that
            // the holder's `CREATE INDEX CONCURRENTLY` waits for in turn (PostgreSQL reports the deadlock and
            // cancels one of them).
            while try await sql.query("SELECT pg_try_advisory_lock(\(lockKey)) AS locked", key.values).first?["locked"]
                .bool != true
            {
                try await Task.sleep(for: advisoryLockPoll)
            }
            locked = true
            for statement in prelude {
                try await sql.execute(statement)
            }
            let applied = try await appliedVersions(sql)
            let milliseconds = max(1, lockTimeout.wholeMicroseconds / 1000)
            let missing = try await missing(applied, through: through, sql: sql)
            let now = missing.isEmpty ? 0 : try await databaseNow(sql)
            for migration in missing {
                var pending: [String] = []
                for step in migration.steps(.postgres, now) {
                    switch step {
                    case .ddl(let statement):
                        pending.append(statement)
                    case .index(let name, let definition):
                        if !pending.isEmpty {
                            try await ddlTransaction(pending, lockTimeoutMilliseconds: milliseconds, sql: sql)
                            pending = []
                        }
                        try await buildConcurrently(name, on: definition, sql: sql)
                    }
                }
                try await ddlTransaction(pending, lockTimeoutMilliseconds: milliseconds, recording: migration, sql: sql)
            }
        } catch {
            if locked { _ = try? await sql.execute("SELECT pg_advisory_unlock(\(lockKey))", key.values) }
            _ = try? await sql.execute("RESET statement_timeout")
            throw error
        }
        try await sql.execute("SELECT pg_advisory_unlock(\(lockKey))", key.values)
        try await sql.execute("RESET statement_timeout")
    }

    /// Runs `statements` in one transaction under a lock timeout, and records `migration` in it when given.
    private static func ddlTransaction(
        _ statements: [String], lockTimeoutMilliseconds: Int64, recording migration: Migration? = nil,
        sql: any SQLExecutor
    ) async throws {
        guard !statements.isEmpty || migration != nil else { return }
        try await sql.execute("BEGIN")
        try await sql.committing { sql in
            try await sql.execute("SET LOCAL lock_timeout = \(lockTimeoutMilliseconds)")
            for statement in statements {
                try await sql.execute(statement)
            }
            if let migration { try await record(migration, sql: sql) }
        }
    }

    /// Builds index `name` with `CREATE INDEX CONCURRENTLY IF NOT EXISTS`, first dropping an invalid index of that
    /// name (what an interrupted concurrent build leaves).
    private static func buildConcurrently(_ name: String, on definition: String, sql: any SQLExecutor) async throws {
        var binds = SQLBinds()
        let found = try await sql.query(
            "SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass(\(binds.add(.text(name))))",
            binds.values)
        if let row = found.first, try row["valid"].bool == false {
            try await sql.execute("DROP INDEX CONCURRENTLY IF EXISTS \(name)")
        }
        try await sql.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS \(name) ON \(definition)")
    }

    /// Creates `schema_migrations` (and its `serves_from` column) when missing and returns the versions it records.
    private static func appliedVersions(_ sql: any SQLExecutor) async throws -> Set<Int64> {
        try await sql.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)")
        if try await !hasServesFrom(sql) {
            try await sql.execute("ALTER TABLE schema_migrations ADD COLUMN serves_from BIGINT")
        }
        try await fillServesFrom(sql)
        return Set(try await recorded(sql).map(\.version))
    }

    /// Fills in `serves_from` for the versions this code knows that were recorded without it (by a badgepipe from
    /// before the column): what this code records for them (``requirement(through:)``), so that the requirement
    /// of the versions applied next builds on what they truly need rather than on each version taken for itself.
    private static func fillServesFrom(_ sql: any SQLExecutor) async throws {
        let unfilled = try await sql.query("SELECT version FROM schema_migrations WHERE serves_from IS NULL", [])
            .compactMap { try $0["version"].int64 }
        for version in unfilled where migrations.contains(where: { $0.version == version }) {
            var binds = SQLBinds()
            let serves = binds.add(.int(requirement(through: version)))
            try await sql.execute(
                "UPDATE schema_migrations SET serves_from = \(serves) WHERE version = \(binds.add(.int(version))) "
                    + "AND serves_from IS NULL", binds.values)
        }
    }

    /// The oldest code a database with this code's versions up to `version` serves: the latest of them that is not
    /// additive (what ``servesFrom(_:requirement:)`` records, version after version).
    static func requirement(through version: Int64) -> Int64 {
        migrations.filter { $0.version <= version && !$0.additive }.map(\.version).max() ?? version
    }

    /// Whether `schema_migrations` has its `serves_from` column (added to databases from before it).
    private static func hasServesFrom(_ sql: any SQLExecutor) async throws -> Bool {
        let rows: [SQLRow]
        if sql.dialect == .postgres {
            rows = try await sql.query(
                "SELECT 1 AS found FROM information_schema.columns WHERE table_schema = current_schema() "
                    + "AND table_name = 'schema_migrations' AND column_name = 'serves_from'", [])
        } else {
            rows = try await sql.query(
                "SELECT 1 AS found FROM pragma_table_info('schema_migrations') WHERE name = 'serves_from'", [])
        }
        return !rows.isEmpty
    }

    /// Each recorded version with the oldest code it serves (the version itself when none is recorded: a version
    /// from before `serves_from` that this code does not know, see ``fillServesFrom(_:)``).
    private static func recorded(_ sql: any SQLExecutor) async throws -> [(version: Int64, servesFrom: Int64)] {
        try await sql.query("SELECT version, serves_from FROM schema_migrations", []).compactMap { row in
            guard let version = try row["version"].int64 else { return nil }
            return (version, try row["serves_from"].int64 ?? version)
        }
    }

    /// Whether this code may run against a database whose recorded versions are `recorded`: it may unless the
    /// database has a version this code does not know that does not serve it.
    enum Compatibility: Equatable {
        /// The database is at or below this code's version.
        case current
        /// The database is newer, and every version it has still serves this code.
        case newerButServed(newest: Int64)
        /// The database is newer, and needs code at `requires` or later.
        case tooNew(newest: Int64, requires: Int64)
    }

    static func compatibility(_ recorded: [(version: Int64, servesFrom: Int64)]) -> Compatibility {
        guard let newest = recorded.map(\.version).max(), newest > latestVersion else { return .current }
        let requires = recorded.map(\.servesFrom).max() ?? newest
        return requires <= latestVersion ? .newerButServed(newest: newest) : .tooNew(newest: newest, requires: requires)
    }

    /// The error for a database that needs code at `requires` or later.
    static func tooNew(newest: Int64, requires: Int64) -> StoreError {
        StoreError(
            code: .schemaTooNew,
            message: "the database schema is at version \(newest) and serves badgepipe from schema version "
                + "\(requires); this badgepipe knows up to \(latestVersion): upgrade badgepipe",
            transient: false)
    }

    /// Checks, on a running store, that the database still serves this code (a newer badgepipe may have migrated
    /// it since); throws `schema_too_new` when it does not. One read of `schema_migrations`.
    static func checkCompatibility(_ database: any SQLTransactor) async throws {
        let recorded = try await database.transaction { sql in try await Self.recorded(sql) }
        if case .tooNew(let newest, let requires) = compatibility(recorded) {
            throw tooNew(newest: newest, requires: requires)
        }
    }

    /// The migrations not in `applied`, up to `through`, in order; throws `schema_too_new` when the database has a
    /// version this code does not know that does not serve it.
    private static func missing(
        _ applied: Set<Int64>, through: Int64, sql: any SQLExecutor
    ) async throws -> [Migration] {
        if let newest = applied.max(), newest > latestVersion {
            if case .tooNew(let newest, let requires) = compatibility(try await recorded(sql)) {
                throw tooNew(newest: newest, requires: requires)
            }
            return []
        }
        return migrations.filter { !applied.contains($0.version) && $0.version <= through }.sorted {
            $0.version < $1.version
        }
    }

    /// The oldest code a database serves once `migration` is applied on top of what it has (`requirement`, the
    /// highest `serves_from` recorded so far).
    static func servesFrom(_ migration: Migration, requirement: Int64) -> Int64 {
        migration.additive ? requirement : migration.version
    }

    private static func record(_ migration: Migration, sql: any SQLExecutor) async throws {
        let now = FleetQueries.statementNow(sql.dialect)
        let requirement = try await recorded(sql).map(\.servesFrom).max() ?? 0
        var binds = SQLBinds()
        let version = binds.add(.int(migration.version))
        let serves = binds.add(.int(servesFrom(migration, requirement: requirement)))
        try await sql.execute(
            "INSERT INTO schema_migrations (version, applied_at, serves_from) VALUES (\(version), \(now), \(serves))",
            binds.values)
    }

    /// The database's time, in microseconds since the epoch.
    private static func databaseNow(_ sql: any SQLExecutor) async throws -> Int64 {
        let rows = try await sql.query("SELECT \(FleetQueries.statementNow(sql.dialect)) AS now", [])
        guard let now = try rows.first?["now"].int64 else {
            throw StoreError.corrupt("the database did not tell its time")
        }
        return now
    }

    /// The highest migration version.
    static var latestVersion: Int64 { migrations.map(\.version).max() ?? 0 }
}
