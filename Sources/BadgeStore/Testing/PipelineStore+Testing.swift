import BadgeCore
import BadgeWire

// What only tests call. The `PipelineStore` protocol holds what the worker calls; the operations here are
// conveniences over it and readers of a store's rows that tests check their results with. They are SPI
// (`@_spi(Testing)`): a test target imports them with `@_spi(Testing) import BadgeStore`, and no file under
// `Sources/` does (`.ci/run` checks it). They stay in this module rather than a test support target
// because the readers decode rows through the store's internals (outbox rows and their stored events, users'
// rows), which a target outside the module cannot see.

@_spi(Testing)
extension PipelineStore {
    /// Applies `events` in order in one database transaction (all or nothing) as one batch under `context`, and
    /// returns what each event did: ``apply(_:policy:)`` with one ``ApplyBatch``.
    public func apply(
        _ events: [Event], policy: BadgePolicy, context: ApplyContext = .none
    ) async throws -> [AppliedEvent] {
        try await apply([ApplyBatch(events: events, context: context)], policy: policy).first ?? []
    }
}

@_spi(Testing)
extension SQLBackedStore {
    /// The outbox's pushes, due or not, claimed or not, oldest (lowest id, planning order) first; only those of
    /// `partition` when it is given. Reads only: nothing is claimed.
    public func pendingPushes(limit: Int, partition: Int? = nil) async throws -> [OutboxPush] {
        guard limit > 0 else { return [] }
        return try await sqlBackend.database.transaction { sql in
            var binds = SQLBinds()
            let partitionFilter = partition.map { "WHERE partition_id = \(binds.add(.int(Int64($0)))) " } ?? ""
            let rows = try await sql.query(
                "SELECT \(OutboxRow.selectColumns) FROM outbox \(partitionFilter)"
                    + "ORDER BY id LIMIT \(binds.add(.int(Int64(limit))))",
                binds.values)
            var events = try await OutboxEvents.read(for: rows, sql: sql)
            return try rows.map { try OutboxRow.decodeListed($0, events: &events) }
        }
    }

    /// The stored state of one user (zero counts and default preferences for an unknown user).
    public func snapshot(user: String) async throws -> UserSnapshot {
        try await sqlBackend.database.transaction { sql in
            var binds = SQLBinds()
            let row = try await sql.query(
                "SELECT \(EventRules.UserRow.columns) FROM users WHERE user_id = \(binds.add(.text(user)))",
                binds.values
            ).first
            let state = try row.map { try EventRules.UserRow(row: $0) } ?? EventRules.UserRow()
            var deviceBinds = SQLBinds()
            let devices = try await sql.query(
                "SELECT token, provider, topic, environment, app FROM devices "
                    + "WHERE user_id = \(deviceBinds.add(.text(user))) AND active",
                deviceBinds.values)
            return UserSnapshot(
                user: user, counts: state.counts, badgeVersion: state.badgeVersion, badgeEnabled: state.badgeEnabled,
                previews: state.previews, readAllUntil: state.readAllUntil.map(Timestamp.init(microsecondsSinceEpoch:)),
                openedUntil: state.openedUntil.map(Timestamp.init(microsecondsSinceEpoch:)),
                // Same order as InboxModel (Swift string order), independent of the database's collation.
                devices: try devices.map(RegisteredDevice.init(row:)).sorted { $0.token < $1.token })
        }
    }
}
