/// The database connections of an SQL-backed store, opaque outside this module.
public struct SQLBackend: Sendable {
    /// Events, outbox and claims.
    let database: any SQLTransactor
    /// Lease rounds (a pool of their own on PostgreSQL, so that renewals never queue behind bulk work).
    let leases: any SQLTransactor
    let hooks: StoreHooks
}
