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
        let table: String
        let old: String
        switch kind {
        case .processedEvents: (table, old) = ("processed_events", "processed_at < $1")
        case .readTombstones: (table, old) = ("read_tombstones", "created_at < $1")
        case .readNotifications: (table, old) = ("notifications", "read AND occurred_at < $1")
        case .readMessages: (table, old) = ("messages", "read AND occurred_at < $1")
        }
        return try await database.transaction { sql in
            // The batch's rows by their physical address (a TID scan on PostgreSQL, the rowid on SQLite), found once:
            // with `(key) IN (SELECT key … LIMIT $2)`, a generic plan made while the table was small joined the
            // subquery to the old rows and ran it again for each of them (1.2 s for 500 of 20,000 rows; with a
            // million it would never finish within the statement timeout, and retention would stop).
            let address = sql.dialect.rowAddress
            let statement =
                "DELETE FROM \(table) WHERE "
                + sql.dialect.among(address, "SELECT \(address) FROM \(table) WHERE \(old) LIMIT $2")
                + " AND \(old) RETURNING 1"
            return try await sql.query(statement, [.int(cutoff), .int(Int64(limit))]).count
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
