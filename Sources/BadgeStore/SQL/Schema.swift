import BadgeCore
import BadgeWire

/// The schema, as numbered migrations applied in order and recorded in `schema_migrations`.
enum Schema {
    struct Migration: Sendable {
        var version: Int64
        var statements: @Sendable (SQLDialect) -> [String]
    }

    /// The key of the PostgreSQL advisory lock that serialises concurrent migrations ("BadgePip").
    static let advisoryLockKey: Int64 = 0x4261_6467_6550_6970

    static let migrations: [Migration] = [
        Migration(version: 1) { dialect in
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
            ]
        },
        // Fleets: partition leases with fencing epochs, the live workers, the partition of each outbox row, and
        // the newest badge_version pushed to each device (the guard against stale pushes from a zombie worker).
        Migration(version: 2) { _ in
            [
                "ALTER TABLE outbox ADD COLUMN partition_id BIGINT",
                "CREATE INDEX outbox_partition ON outbox (partition_id, id)",
                "ALTER TABLE devices ADD COLUMN pushed_version BIGINT NOT NULL DEFAULT -1",
                """
                CREATE TABLE partition_leases (
                    partition_id BIGINT PRIMARY KEY,
                    owner TEXT,
                    epoch BIGINT NOT NULL DEFAULT 0,
                    expires_at BIGINT NOT NULL DEFAULT 0
                )
                """,
                "CREATE TABLE fleet_workers (worker_id TEXT PRIMARY KEY, last_seen BIGINT NOT NULL)",
            ]
        },
        // Fleets: the lease epoch under which an outbox row was claimed for sending. A partition's new owner gives
        // rows claimed under an earlier epoch (possibly sent, not yet recorded) time to be recorded by their
        // claimer before it sends them again.
        Migration(version: 3) { _ in
            ["ALTER TABLE outbox ADD COLUMN claimed_epoch BIGINT"]
        },
        // The delivery stage: each outbox row has its own retry schedule (next attempt, attempts so far) and the
        // time it was planned (for giving up after a configurable age); a device's pushes are taken in id order
        // (outbox_token_id), and a row waiting for its next attempt holds back the later rows of its token.
        Migration(version: 4) { _ in
            [
                "ALTER TABLE outbox ADD COLUMN created_at BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE outbox ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE outbox ADD COLUMN next_attempt_at BIGINT NOT NULL DEFAULT 0",
                "DROP INDEX outbox_token",
                "CREATE INDEX outbox_token_id ON outbox (token, id)",
            ]
        },
        // Retention (see `RetentionKind`): when an event id was recorded and a read tombstone made (rows from
        // before read as made now, the migration's time), indexes to find what is old, and the maintenance lease
        // that lets one worker of a fleet do the deleting. Devices: when each was registered.
        Migration(version: 5) { _ in
            let now = Timestamp.now().microsecondsSinceEpoch
            return [
                "ALTER TABLE processed_events ADD COLUMN processed_at BIGINT NOT NULL DEFAULT \(now)",
                "CREATE INDEX processed_events_processed_at ON processed_events (processed_at)",
                "ALTER TABLE read_tombstones ADD COLUMN created_at BIGINT NOT NULL DEFAULT \(now)",
                "CREATE INDEX read_tombstones_created_at ON read_tombstones (created_at)",
                "CREATE INDEX notifications_read_occurred ON notifications (occurred_at) WHERE read",
                "CREATE INDEX messages_read_occurred ON messages (occurred_at) WHERE read",
                // When a device was last registered (its event's occurred_at): the cap on devices per user drops
                // the one registered longest ago.
                "ALTER TABLE devices ADD COLUMN registered_at BIGINT NOT NULL DEFAULT 0",
                """
                CREATE TABLE maintenance_leases (
                    name TEXT PRIMARY KEY,
                    owner TEXT,
                    expires_at BIGINT NOT NULL DEFAULT 0
                )
                """,
            ]
        },
    ]

    /// Applies the missing migrations in one transaction, up to and including `through` (all by default; tests
    /// build older schemas with it). `prelude` runs first, after the advisory lock on PostgreSQL (e.g. creating the
    /// configured schema).
    static func migrate(
        _ database: any SQLTransactor, prelude: [String] = [], through: Int64 = .max
    ) async throws {
        try await database.transaction { sql in
            if sql.dialect == .postgres {
                // A migration may build indexes over large tables: no statement timeout for it.
                try await sql.execute("SET LOCAL statement_timeout = 0")
                try await sql.execute("SELECT pg_advisory_xact_lock($1)", [.int(advisoryLockKey)])
            }
            for statement in prelude {
                try await sql.execute(statement)
            }
            try await sql.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)"
            )
            let applied = Set(
                try await sql.query("SELECT version FROM schema_migrations", []).compactMap { try $0["version"].int64 })
            for migration in migrations where !applied.contains(migration.version) && migration.version <= through {
                for statement in migration.statements(sql.dialect) {
                    try await sql.execute(statement)
                }
                try await sql.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
                    [.int(migration.version), .int(Timestamp.now().microsecondsSinceEpoch)])
            }
        }
    }

    /// The highest migration version.
    static var latestVersion: Int64 { migrations.map(\.version).max() ?? 0 }
}
