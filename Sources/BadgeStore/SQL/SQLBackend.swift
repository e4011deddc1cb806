/// The database connections of an SQL-backed store, opaque outside this module.
public struct SQLBackend: Sendable {
    /// Events, outbox and claims.
    let database: any SQLTransactor
    /// Lease rounds (a pool of their own on PostgreSQL, so that renewals never queue behind bulk work).
    let leases: any SQLTransactor
    let hooks: StoreHooks
    /// The PostgreSQL channel on which writers wake the delivery loop of a partition (see
    /// ``PipelineStore/listenForOutbox(listening:partition:)``); nil on SQLite, whose one worker wakes its own loops.
    var outboxChannel: String? = nil
}
