import BadgeCore
import BadgeWire

/// Retention's statements: each deletes one small batch of old rows, found through an index, in a transaction of
/// its own (so that it holds its row locks for a moment only and never makes ingestion wait long); and the
/// maintenance lease, which lets one worker of a fleet do the deleting.
enum RetentionQueries {
    static func purge(
        _ kind: RetentionKind, olderThan cutoff: Int64, limit: Int, database: any SQLTransactor
    ) async throws -> Int {
        guard limit > 0 else { return 0 }
        let statement: String
        switch kind {
        case .processedEvents:
            statement = """
                DELETE FROM processed_events WHERE event_id IN (
                    SELECT event_id FROM processed_events WHERE processed_at < $1 LIMIT $2
                ) AND processed_at < $1 RETURNING 1
                """
        case .readTombstones:
            statement = """
                DELETE FROM read_tombstones WHERE (user_id, notification_id) IN (
                    SELECT user_id, notification_id FROM read_tombstones WHERE created_at < $1 LIMIT $2
                ) AND created_at < $1 RETURNING 1
                """
        case .readNotifications:
            statement = """
                DELETE FROM notifications WHERE (user_id, id) IN (
                    SELECT user_id, id FROM notifications WHERE read AND occurred_at < $1 LIMIT $2
                ) AND read AND occurred_at < $1 RETURNING 1
                """
        case .readMessages:
            statement = """
                DELETE FROM messages WHERE (user_id, event_id) IN (
                    SELECT user_id, event_id FROM messages WHERE read AND occurred_at < $1 LIMIT $2
                ) AND read AND occurred_at < $1 RETURNING 1
                """
        }
        return try await database.transaction { sql in
            try await sql.query(statement, [.int(cutoff), .int(Int64(limit))]).count
        }
    }

    static func maintenanceLease(
        _ name: String, worker: String, ttlMilliseconds: Int64, database: any SQLTransactor
    ) async throws -> Bool {
        let now = Timestamp.now().microsecondsSinceEpoch
        return try await database.transaction { sql in
            try await sql.execute(
                "INSERT INTO maintenance_leases (name, owner, expires_at) VALUES ($1, NULL, 0) "
                    + "ON CONFLICT (name) DO NOTHING", [.text(name)])
            let rows = try await sql.query(
                """
                UPDATE maintenance_leases SET owner = $2, expires_at = $3
                WHERE name = $1 AND (owner = $2 OR owner IS NULL OR expires_at < $4) RETURNING owner
                """, [.text(name), .text(worker), .int(now + ttlMilliseconds * 1000), .int(now)])
            return !rows.isEmpty
        }
    }
}
