import BadgeSupport

/// A store failure.
///
/// Every failure has exactly one ``DatabaseFailure`` class (``failure``), which says what the worker does about it:
/// park the event (``DatabaseFailure/data``), retry at once (``DatabaseFailure/connection``), wait for the database
/// (``DatabaseFailure/unavailable``), or end the work (``DatabaseFailure/other``). A batch that failed with a retried
/// class had no effect.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code. Its ``rawValue`` is the short name logs and parked messages show.
    public typealias Code = ErrorCode<StoreError>

    /// The error's code.
    public var code: Code
    /// A one-line human-readable reason.
    public var message: String
    /// What the failure means for the work that met it.
    public var failure: DatabaseFailure
    /// The event the failure is about, when it is about one (``Code/readStateTooLarge``).
    public var subject: String?

    /// Creates an error of the class `failure`.
    public init(code: Code, message: String, failure: DatabaseFailure, subject: String? = nil) {
        self.code = code
        self.message = message
        self.failure = failure
        self.subject = subject
    }

    /// Creates an error that a retry at once may mend (``DatabaseFailure/connection``) or not
    /// (``DatabaseFailure/other``).
    public init(code: Code, message: String, transient: Bool) {
        self.init(code: code, message: message, failure: transient ? .connection : .other)
    }

    /// Whether the same operation is tried again in place (``DatabaseFailure/isRetried``).
    public var transient: Bool { failure.isRetried }

    /// `code: message`, with the class when the failure is retried.
    public var description: String {
        "\(code): \(message)\(failure.isRetried ? " (\(failure.rawValue))" : "")"
    }

    /// Whether the work ran out of time: PostgreSQL's statement timeout (57014) or idle-in-transaction timeout
    /// (25P03: the worker took that long between two statements of its transaction, as a starved CPU does with a
    /// heavy batch), or the worker's own limit on an attempt. The same work may run out of time again; less work
    /// per transaction gets through.
    public var ranOutOfTime: Bool {
        code == .timeout || code == .sqlState("57014") || code == .sqlState("25P03")
    }

    /// Whether the database refused the data itself (``DatabaseFailure/data``): retrying would fail the same way;
    /// the event that carries the data is the culprit.
    public var refusesInput: Bool { failure == .data }

    /// A bounded name for the kind of failure, for metrics: `connection`, `timeout`, `conflict` (serialization
    /// failure, deadlock, SQLite busy or locked), `refused_input` (``refusesInput``), `unavailable` (the database
    /// cannot write now), `lease` (lost), `closed`, `configuration` or `other`.
    public var errorClass: String {
        switch code {
        case .connection, .connectionClosed, .connectionClosedBeforeBegin: "connection"
        case .timeout, .sqlState("57014"): "timeout"
        case .serializationFailure, .deadlock, .sqliteBusy, .sqliteLocked: "conflict"
        case .leaseLost: "lease"
        case .closed: "closed"
        case .badDatabaseURL: "configuration"
        default:
            switch failure {
            case .data: "refused_input"
            case .unavailable: "unavailable"
            case .connection: "connection"
            case .other: "other"
            }
        }
    }

    static func badURL(_ message: String) -> StoreError {
        StoreError(code: .badDatabaseURL, message: message, transient: false)
    }

    static func corrupt(_ message: String) -> StoreError {
        StoreError(code: .corruptData, message: message, transient: false)
    }

    static let closed = StoreError(code: .closed, message: "the store is closed", transient: false)
}

extension ErrorCode<StoreError> {
    /// A PostgreSQL server error by SQLSTATE.
    public static func sqlState(_ state: String) -> Self { Self("sqlstate_\(state)") }
    /// A read-state event of the batch (read-all, opened, conversation read) would change more rows than one
    /// transaction may (``ApplyContext/readStateChunk``): apply the batch up to it, then it alone, chunk by chunk
    /// (``ApplyContext/chunked``). ``StoreError/subject`` names the event.
    public static var readStateTooLarge: Self { Self("read_state_too_large") }
    /// A transaction of several events ran out of time (``ranOutOfTime``): apply its events in smaller
    /// transactions (halves, down to one event, which is retried in place as any transient failure).
    public static var batchTooLong: Self { Self("batch_too_long") }
    /// The batch's or claim's lease is no longer this worker's.
    public static var leaseLost: Self { Self("lease_lost") }
    /// The store was closed.
    public static var closed: Self { Self("closed") }
    /// A stored row could not be read back.
    public static var corruptData: Self { Self("corrupt_data") }
    /// A statement's result has no column of the name the code reads (a statement and its reader disagree).
    public static var missingColumn: Self { Self("missing_column") }
    /// The database URL is not usable.
    public static var badDatabaseURL: Self { Self("bad_database_url") }
    /// The connection failed or was lost.
    public static var connection: Self { Self("connection") }
    /// The connection had closed when a statement was to be written.
    public static var connectionClosed: Self { Self("connection_closed") }
    /// The connection had closed before the transaction began (nothing was sent).
    public static var connectionClosedBeforeBegin: Self { Self("connection_closed_before_begin") }
    /// PostgreSQL serialization failure (40001).
    public static var serializationFailure: Self { Self("serialization_failure") }
    /// PostgreSQL deadlock (40P01).
    public static var deadlock: Self { Self("deadlock") }
    /// An operation took longer than its limit.
    public static var timeout: Self { Self("timeout") }
    /// SQLite: the database is busy (another writer).
    public static var sqliteBusy: Self { Self("sqlite_busy") }
    /// SQLite: a table is locked.
    public static var sqliteLocked: Self { Self("sqlite_locked") }
    /// SQLite: a constraint refused the data.
    public static var sqliteConstraint: Self { Self("sqlite_constraint") }
    /// SQLite: the disk or the database file is full.
    public static var sqliteFull: Self { Self("sqlite_full") }
    /// SQLite: any other error.
    public static var sqlite: Self { Self("sqlite") }
    /// PostgreSQL: a client-side error of the driver.
    public static var postgres: Self { Self("postgres") }
    /// PostgreSQL: a server error without an SQLSTATE.
    public static var server: Self { Self("server") }
    /// The database's schema is at a version newer than this code knows: an older badgepipe must not write to
    /// it (see `Schema`). Upgrading badgepipe is the fix; retrying is not.
    public static var schemaTooNew: Self { Self("schema_too_new") }
    /// A read asked for more users at once than it takes (``AppReadLimits/usersPerRead``).
    public static var tooManyUsers: Self { Self("too_many_users") }
}
