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

    /// The column type of an auto-incrementing 64-bit primary key.
    var autoIncrementPrimaryKey: String {
        self == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
    }
}
