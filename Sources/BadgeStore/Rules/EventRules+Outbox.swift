import BadgeCore
import BadgeSupport

extension EventRules {
    /// One row of ``planned`` as the outbox insert returned it.
    struct WrittenPush: Equatable {
        var id: Int64
        /// When it was planned: the database's now in the insert.
        var createdAt: Int64
    }

    /// Adds `planned` to `batch` as its last parts: the events of its alerts, each once (``OutboxEvents``), then the
    /// outbox insert, whose `RETURNING` ``writtenPushes(_:)`` reads. `created_at` is the database's now. Nothing is
    /// claimed here: the partition's delivery stage claims every push (`DeliveryQueries.claimDue`).
    func addOutbox(to batch: inout SQLWriteBatch) {
        // One row per event with an alert planned, however many devices it goes to. An event id is planned once
        // (`processed_events`): a row already there is that event's, left by a first copy older than the retention
        // whose pushes still wait.
        let now = FleetQueries.statementNow(sql.dialect)
        var events = SQLRowSet([("event_id", .text), ("event_json", .text)])
        var written = Set<String>()
        for push in planned where push.kind.isAlert && !written.contains(push.eventID) {
            guard let json = eventJSON[push.eventID] else { continue }
            written.insert(push.eventID)
            events.append([.text(push.eventID), .text(json)])
        }
        batch.add(events) {
            "INSERT INTO outbox_events (event_id, event_json, created_at) SELECT event_id, event_json, \(now) "
                + "FROM \($0) WHERE true ON CONFLICT (event_id) DO NOTHING"
        }
        var set = OutboxRow.rowSet()
        for (push, pushPartition) in zip(planned, plannedPartitions) {
            set.append(OutboxRow.values(of: push, partition: pushPartition))
        }
        batch.add(set) {
            "INSERT INTO outbox (\(OutboxRow.insertColumns)) SELECT \(OutboxRow.valueColumns), \(now) FROM \($0) "
                + "WHERE true ORDER BY ord RETURNING id, event_id, token, created_at"
        }
    }

    /// The outbox rows of `planned` (ids increasing in planning order) from the outbox insert's `returned` rows.
    func writtenPushes(_ returned: [SQLRow]) throws -> [WrittenPush] {
        var byKey: [String: WrittenPush] = [:]
        for row in returned {
            guard let id = try row["id"].int64, let eventID = try row["event_id"].string,
                let token = try row["token"].string
            else { throw StoreError.corrupt("bad outbox RETURNING row") }
            byKey[eventID + " " + token] = WrittenPush(id: id, createdAt: try row["created_at"].int64 ?? 0)
        }
        var rows: [WrittenPush] = []
        rows.reserveCapacity(planned.count)
        for push in planned {
            guard let row = byKey[push.eventID + " " + push.token] else {
                throw StoreError.corrupt("outbox id missing for a push")
            }
            // Both databases number the rows of an ordered INSERT … SELECT in order; the outbox order relies on it.
            guard row.id > (rows.last?.id ?? .min) else { throw StoreError.corrupt("outbox ids out of planning order") }
            rows.append(row)
        }
        return rows
    }
}
