/// The SQL flavour of a backend. Statements are written once with `$1`-style placeholders; the few spots
/// where the dialects differ ask the dialect.
enum SQLDialect: Sendable {
    case postgres
    case sqlite

    /// `FOR UPDATE` on PostgreSQL; nothing on SQLite, whose write transactions are exclusive.
    var forUpdate: String {
        self == .postgres ? " FOR UPDATE" : ""
    }

    /// `FOR UPDATE SKIP LOCKED` on PostgreSQL (rows another transaction holds are left out); nothing on SQLite.
    var forUpdateSkipLocked: String {
        self == .postgres ? " FOR UPDATE SKIP LOCKED" : ""
    }

    /// `FOR KEY SHARE` on PostgreSQL; nothing on SQLite. Unlike `FOR SHARE` it lets plain updates of the row's
    /// other columns through (they take `FOR NO KEY UPDATE`) and still blocks `FOR UPDATE` and deletes.
    var forKeyShare: String {
        self == .postgres ? " FOR KEY SHARE" : ""
    }

    /// `FOR NO KEY UPDATE` on PostgreSQL (what an update of non-key columns takes); nothing on SQLite. Conflicts
    /// with `FOR UPDATE` and with itself, not with `FOR KEY SHARE`.
    var forNoKeyUpdate: String {
        self == .postgres ? " FOR NO KEY UPDATE" : ""
    }

    /// `column` is one of the values `subquery` returns: `column = ANY(ARRAY(subquery))` on PostgreSQL, an index
    /// condition whatever the statistics say (the subquery runs once, as an init plan); `column IN (subquery)` on
    /// SQLite.
    ///
    /// Why: the connections cache generic plans (`plan_cache_mode = force_generic_plan`), made on the statistics
    /// of the moment. With `IN (SELECT …)`, a plan made while the outbox is empty (as autovacuum finds it once it
    /// drains) joins the subquery to a scan of the whole table, and runs the subquery again for each row of it.
    func among(_ column: String, _ subquery: String) -> String {
        self == .postgres ? "\(column) = ANY(ARRAY(\(subquery)))" : "\(column) IN (\(subquery))"
    }

    /// Ends an `EXISTS` subquery so that PostgreSQL keeps it a subplan run for each outer row with that row's
    /// values as index conditions (` OFFSET 0`: a subquery with an offset is never pulled up into a join);
    /// nothing on SQLite, which runs correlated subqueries that way anyway.
    ///
    /// Why: pulled up, the outbox's "nothing of this device waits before it" check becomes an anti join, and a
    /// generic plan made while the outbox looks empty scans the whole outbox for every row the claim looks at:
    /// claims over a backlog would run into the statement timeout again and again.
    var perRowSubquery: String {
        self == .postgres ? " OFFSET 0" : ""
    }

    /// The hidden column that addresses a row where it is stored: `ctid` on PostgreSQL, `rowid` on SQLite. Only
    /// for finding rows again within one statement (a row's `ctid` changes when it is updated).
    var rowAddress: String {
        self == .postgres ? "ctid" : "rowid"
    }

    /// `ADD COLUMN IF NOT EXISTS` on PostgreSQL, where a migration's step may run again (see `Schema`); `ADD COLUMN`
    /// on SQLite, which has no such form and applies each migration in one transaction.
    var addColumn: String {
        self == .postgres ? "ADD COLUMN IF NOT EXISTS" : "ADD COLUMN"
    }

    /// The column type of an auto-incrementing 64-bit primary key.
    var autoIncrementPrimaryKey: String {
        self == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
    }
}
