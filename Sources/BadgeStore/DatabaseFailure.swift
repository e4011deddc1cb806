import SQLiteNIO

/// What a database failure means for the work that met it. Every failure of the store falls in exactly one class,
/// decided here and only here: ``classify(sqlState:)`` for PostgreSQL, ``classify(sqlite:)`` for SQLite.
///
/// | class | examples | what the worker does |
/// | --- | --- | --- |
/// | ``data`` | a constraint, an encoding, a value out of range | bisects the batch and parks the culprit |
/// | ``connection`` | a dropped connection, a timeout, a serialization failure, a deadlock, SQLite busy | retries in place at once, with a short backoff |
/// | ``unavailable`` | read-only (a failover onto a standby), disk full, out of memory or connections, shutting down, in recovery | keeps what it holds unacked, takes nothing more, tries the same work again with a capped backoff and reports unready |
/// | ``other`` | a bug, a bad setting, a lost lease | ends the work that met it |
public enum DatabaseFailure: String, Sendable, CaseIterable {
    /// The database refused this event's data: retrying fails the same way; the event is the culprit.
    case data
    /// The connection or the transaction failed: the same work, tried again at once, may succeed.
    case connection
    /// The database cannot write now (read-only, full, out of resources, shutting down, starting): the same work
    /// succeeds once it can, which may take minutes.
    case unavailable
    /// Anything else: a bug, a setting, a lost lease, the store closed.
    case other

    /// Whether the worker tries the same work again in place.
    public var isRetried: Bool { self == .connection || self == .unavailable }

    /// The class of a PostgreSQL error by its SQLSTATE (five characters; empty for an error without one).
    public static func classify(sqlState state: String) -> DatabaseFailure {
        let errorClass = state.prefix(2)
        switch errorClass {
        // 22 data exception, 23 integrity constraint violation, 54 program limit exceeded (an index row too big).
        case "22", "23", "54": return .data
        // 08 connection exception.
        case "08": return .connection
        // 53 insufficient resources: 53100 disk full, 53200 out of memory, 53300 too many connections, 53400
        // configuration limit exceeded.
        case "53": return .unavailable
        default: break
        }
        switch state {
        case "40001", "40P01", "40003":  // serialization failure, deadlock, statement completion unknown
            return .connection
        case "55P03", "57014", "25P03", "57P05":  // lock timeout, statement timeout or cancel, idle timeouts
            return .connection
        case "26000":  // the session lost a prepared statement (its executor prepares it again)
            return .connection
        case "25006":  // read-only SQL transaction: a standby, or default_transaction_read_only
            return .unavailable
        case "57P01", "57P02", "57P03":  // admin shutdown, crash shutdown, cannot connect now (starting, recovery)
            return .unavailable
        case "58000", "58030":  // system error, I/O error
            return .unavailable
        default:
            return .other
        }
    }

    /// The class of an SQLite result code.
    public static func classify(sqlite reason: SQLiteError.Reason) -> DatabaseFailure {
        switch reason {
        case .constraint, .constraintCheckFailed, .constraintCommitHookFailed, .constraintForeignKeyFailed,
            .constraintUserFunctionFailed, .constraintNotNullFailed, .constraintPrimaryKeyFailed,
            .constraintTriggerFailed,
            .constraintUniqueFailed, .constraintVirtualTableFailed, .constraintUniqueRowIDFailed,
            .constraintUpdateTriggerDeletedRow, .constraintStrictDataTypeFailed, .tooBig, .mismatch, .range:
            return .data
        case .busy, .busyInRecovery, .busyInSnapshot, .busyTimeout, .locked, .lockedBySharedCache,
            .lockedVirtualTable, .schema, .errorRetry, .abortByRollback:
            return .connection
        case .full, .noMemory, .readOnly, .readonlyInRecovery, .readonlyCantLock, .readonlyInRollback,
            .readonlyBackingMoved, .readonlyDirectory, .cantOpen, .cantOpenDirectory, .cantOpenInvalidPath,
            .cantOpenUnfollowedSymlink, .noLFS, .ioError, .ioErrorFailedRead, .ioErrorIncompleteRead,
            .ioErrorFailedWrite, .ioErrorFailedSync, .ioErrorFailedDirSync, .ioErrorFailedTruncate, .ioErrorFailedStat,
            .ioErrorFailedUnlock, .ioErrorFailedReadLock, .ioErrorFailedDelete, .ioErrorNoMemory,
            .ioErrorFailedAccess, .ioErrorFailedLockCheck, .ioErrorFailedAdvisoryLock, .ioErrorFailedClose,
            .ioErrorFailedSharedMemOpen, .ioErrorFailedSharedMemSize, .ioErrorFailedSharedMemMap,
            .ioErrorFailedDeleteNonexistent, .ioErrorFailedMemoryMap, .ioErrorCantFindTempdir:
            return .unavailable
        default:
            return .other
        }
    }
}
