/// A store failure.
///
/// Every failure has exactly one ``DatabaseFailure`` class (``failure``), which says what the worker does about it:
/// park the event (``DatabaseFailure/data``), retry at once (``DatabaseFailure/connection``), wait for the database
/// (``DatabaseFailure/unavailable``), or end the work (``DatabaseFailure/other``). A batch that failed with a retried
/// class had no effect.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code. Its ``rawValue`` is the short name logs and parked messages show.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `lease_lost`, `sqlstate_22021`.
        public let rawValue: String

        /// A code by name.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// A read-state event of the batch (read-all, opened, conversation read) would change more rows than one
        /// transaction may (``ApplyContext/readStateChunk``): apply the batch up to it, then it alone, chunk by chunk
        /// (``ApplyContext/chunked``). ``StoreError/subject`` names the event.
        public static let readStateTooLarge = Code("read_state_too_large")
        /// A transaction of several events ran out of time (``ranOutOfTime``): apply its events in smaller
        /// transactions (halves, down to one event, which is retried in place as any transient failure).
        public static let batchTooLong = Code("batch_too_long")
        /// The batch's or claim's lease is no longer this worker's.
        public static let leaseLost = Code("lease_lost")
        /// This worker's own record of its lease ran out (see `LeaseTerm`).
        public static let leaseTermEnded = Code("lease_term_ended")
        /// The store was closed.
        public static let closed = Code("closed")
        /// A stored row could not be read back.
        public static let corruptData = Code("corrupt_data")
        /// A statement's result has no column of the name the code reads (a statement and its reader disagree).
        public static let missingColumn = Code("missing_column")
        /// The database URL is not usable.
        public static let badDatabaseURL = Code("bad_database_url")
        /// The connection failed or was lost.
        public static let connection = Code("connection")
        /// The connection had closed when a statement was to be written.
        public static let connectionClosed = Code("connection_closed")
        /// The connection had closed before the transaction began (nothing was sent).
        public static let connectionClosedBeforeBegin = Code("connection_closed_before_begin")
        /// PostgreSQL serialization failure (40001).
        public static let serializationFailure = Code("serialization_failure")
        /// PostgreSQL deadlock (40P01).
        public static let deadlock = Code("deadlock")
        /// An operation took longer than its limit.
        public static let timeout = Code("timeout")
        /// SQLite: the database is busy (another writer).
        public static let sqliteBusy = Code("sqlite_busy")
        /// SQLite: a table is locked.
        public static let sqliteLocked = Code("sqlite_locked")
        /// SQLite: a constraint refused the data.
        public static let sqliteConstraint = Code("sqlite_constraint")
        /// SQLite: the disk or the database file is full.
        public static let sqliteFull = Code("sqlite_full")
        /// SQLite: any other error.
        public static let sqlite = Code("sqlite")
        /// PostgreSQL: a client-side error of the driver.
        public static let postgres = Code("postgres")
        /// PostgreSQL: a server error without an SQLSTATE.
        public static let server = Code("server")
        /// The database's schema is at a version newer than this code knows: an older badgepipe must not write to
        /// it (see `Schema`). Upgrading badgepipe is the fix; retrying is not.
        public static let schemaTooNew = Code("schema_too_new")

        /// A PostgreSQL server error by SQLSTATE.
        public static func sqlState(_ state: String) -> Code { Code("sqlstate_\(state)") }
    }

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
    /// cannot write now), `lease` (lost or ended), `closed`, `configuration` or `other`.
    public var errorClass: String {
        switch code {
        case .connection, .connectionClosed, .connectionClosedBeforeBegin: "connection"
        case .timeout, .sqlState("57014"): "timeout"
        case .serializationFailure, .deadlock, .sqliteBusy, .sqliteLocked: "conflict"
        case .leaseLost, .leaseTermEnded: "lease"
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
