import BadgeCore

extension EventRules {
    /// Runs `writes` and writes `planned` to the outbox as the batch's last part (one statement on PostgreSQL);
    /// returns the outbox ids (increasing in planning order).
    func insertOutbox(after writes: SQLWriteBatch) async throws -> [Int64] {
        guard !planned.isEmpty else {
            _ = try await writes.run(sql: sql)
            return []
        }
        var set = OutboxRow.rowSet()
        for push in planned {
            set.append(
                OutboxRow.values(
                    of: push, eventJSON: push.kind.isAlert ? eventJSON[push.eventID] : nil, partition: partition,
                    createdAt: createdAt))
        }
        var batch = writes
        batch.add(set) {
            "INSERT INTO outbox (\(OutboxRow.insertColumns)) SELECT \(OutboxRow.insertColumns) FROM \($0) "
                + "WHERE true ORDER BY ord RETURNING id, event_id, token"
        }
        let returned = try await batch.run(sql: sql)
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
