import BadgeCore
import BadgeSupport

extension EventRules {
    /// One row of ``planned`` as the outbox insert returned it.
    struct WrittenPush: Equatable {
        var id: Int64
        /// The lease epoch when the batch claimed the push (see ``addClaim(to:epochs:)``), else nil.
        var claimedEpoch: Int64?
        /// 0, or the end of its hold when the batch claimed it.
        var nextAttemptAt: Int64
        /// When it was planned: the database's now in the insert.
        var createdAt: Int64
    }

    /// Adds `planned` to `batch` as its last parts: the events of its alerts, each once (``OutboxEvents``), then the
    /// outbox insert, whose `RETURNING` ``writtenPushes(_:)`` reads. With `claiming` (the epochs by partition), the
    /// batch has a claim part (``addClaim(to:epochs:)``): the pushes of the tokens it returns are inserted claimed,
    /// under their partition's epoch and held for ``ApplyContext/claimHold``. `created_at` is the database's now,
    /// and a hold ends that long after it.
    func addOutbox(to batch: inout SQLWriteBatch, claiming epochs: [Int: Int64]?) {
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
        if epochs != nil {
            set = SQLRowSet(set.columns + [("claim_epoch", .int)])
        }
        // Only a device's share may be claimed by the batch (the claim part's token and a claim epoch on the row).
        let inShare = epochs == nil ? [] : pushesInShare()
        for (index, (push, pushPartition)) in zip(planned, plannedPartitions).enumerated() {
            var values = OutboxRow.values(of: push, partition: pushPartition)
            if let epochs { values.append(.int(inShare[index] ? pushPartition.flatMap { epochs[$0] } : nil)) }
            set.append(values)
        }
        let returning = "RETURNING id, event_id, token, claimed_epoch, next_attempt_at, created_at"
        guard epochs != nil else {
            batch.add(set) {
                "INSERT INTO outbox (\(OutboxRow.insertColumns)) SELECT \(OutboxRow.valueColumns), \(now) FROM \($0) "
                    + "WHERE true ORDER BY ord \(returning)"
            }
            return
        }
        let hold = ApplyContext.claimHold.wholeMicroseconds
        let claimed = "s.claim_epoch IS NOT NULL AND s.token IN (SELECT token FROM \(Self.claimPart))"
        batch.add(set) {
            "INSERT INTO outbox (\(OutboxRow.insertColumns), claimed_epoch, next_attempt_at) "
                + "SELECT \(OutboxRow.valueColumns), \(now), CASE WHEN \(claimed) THEN s.claim_epoch END, "
                + "CASE WHEN \(claimed) THEN \(now) + \(hold) ELSE 0 END FROM \($0) "
                + "WHERE true ORDER BY ord \(returning)"
        }
    }

    /// The outbox rows of `planned` (ids increasing in planning order) from the outbox insert's `returned` rows.
    func writtenPushes(_ returned: [SQLRow]) throws -> [WrittenPush] {
        var byKey: [String: WrittenPush] = [:]
        for row in returned {
            guard let id = try row["id"].int64, let eventID = try row["event_id"].string,
                let token = try row["token"].string
            else { throw StoreError.corrupt("bad outbox RETURNING row") }
            byKey[eventID + " " + token] = WrittenPush(
                id: id, claimedEpoch: try row["claimed_epoch"].int64,
                nextAttemptAt: try row["next_attempt_at"].int64 ?? 0, createdAt: try row["created_at"].int64 ?? 0)
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
