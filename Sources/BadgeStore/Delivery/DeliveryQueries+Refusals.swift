extension DeliveryQueries {
    /// Moves `unreadable` outbox rows into `refused_pushes` (id, user, token, partition, every column as text, the
    /// reason, the database's time; an alert's event from `events` when the row names it) and deletes them from the
    /// outbox, inside the caller's transaction; returns the refusals (see ``RefusedPush``). Two statements, however
    /// many rows.
    static func refuse(
        _ unreadable: [(row: SQLRow, why: OutboxRow.Unreadable)], events: OutboxEvents, sql: any SQLExecutor
    ) async throws -> [RefusedPush] {
        guard !unreadable.isEmpty else { return [] }
        var refused: [RefusedPush] = []
        var set = SQLRowSet(
            [
                ("outbox_id", .int), ("user_id", .text), ("token", .text), ("partition_id", .int), ("reason", .text),
                ("detail", .text), ("outbox_row", .text),
            ])
        for (row, why) in unreadable {
            guard let id = try row["id"].int64 else { throw StoreError.corrupt("an outbox row without its id") }
            let refusal = RefusedPush(
                outboxID: id, user: try row["user_id"].string, token: try row["token"].string,
                partition: try row["partition_id"].int64.map { Int($0) }, reason: why.code, detail: why.message)
            refused.append(refusal)
            set.append([
                .int(id), .text(refusal.user), .text(refusal.token), .int(refusal.partition.map { Int64($0) }),
                .text(why.code.rawValue), .text(why.message), .text(OutboxRow.text(of: row, events: events)),
            ])
        }
        // A row can be refused once only (it leaves the outbox in the same transaction); DO NOTHING keeps a claim
        // from failing over it anyway.
        var binds = SQLBinds()
        let source = set.table("s", binds: &binds, dialect: sql.dialect)
        try await sql.execute(
            "INSERT INTO refused_pushes (outbox_id, user_id, token, partition_id, reason, detail, outbox_row, "
                + "refused_at) SELECT s.outbox_id, s.user_id, s.token, s.partition_id, s.reason, s.detail, "
                + "s.outbox_row, \(FleetQueries.now(sql.dialect)) FROM \(source) WHERE true "
                + "ON CONFLICT (outbox_id) DO NOTHING",
            binds.values)
        try await deleteOutboxRows(refused.map(\.outboxID), sql: sql)
        return refused
    }
}
