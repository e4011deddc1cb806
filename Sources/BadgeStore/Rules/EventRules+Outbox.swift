import BadgeCore

extension EventRules {
    /// Adds `planned` to `batch` as its last part (the outbox insert, whose `RETURNING` ``outboxIDs(_:)`` reads).
    func addOutbox(to batch: inout SQLWriteBatch) {
        var set = OutboxRow.rowSet()
        for (push, pushPartition) in zip(planned, plannedPartitions) {
            set.append(
                OutboxRow.values(
                    of: push, eventJSON: push.kind.isAlert ? eventJSON[push.eventID] : nil, partition: pushPartition,
                    createdAt: createdAt))
        }
        batch.add(set) {
            "INSERT INTO outbox (\(OutboxRow.insertColumns)) SELECT \(OutboxRow.insertColumns) FROM \($0) "
                + "WHERE true ORDER BY ord RETURNING id, event_id, token"
        }
    }

    /// The outbox ids of `planned` (increasing in planning order) from the outbox insert's `returned` rows.
    func outboxIDs(_ returned: [SQLRow]) throws -> [Int64] {
        var byKey: [String: Int64] = [:]
        for row in returned {
            guard let id = try row["id"].int64, let eventID = try row["event_id"].string,
                let token = try row["token"].string
            else { throw StoreError.corrupt("bad outbox RETURNING row") }
            byKey[eventID + " " + token] = id
        }
        var ids: [Int64] = []
        ids.reserveCapacity(planned.count)
        for push in planned {
            guard let id = byKey[push.eventID + " " + push.token] else {
                throw StoreError.corrupt("outbox id missing for a push")
            }
            // Both databases number the rows of an ordered INSERT … SELECT in order; the outbox order relies on it.
            guard id > (ids.last ?? .min) else { throw StoreError.corrupt("outbox ids out of planning order") }
            ids.append(id)
        }
        return ids
    }
}
