import SQLiteNIO

extension SQLiteTransactor {
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? SQLiteError { return storeError(reason: error.reason, message: error.message) }
        return StoreError(code: .sqlite, message: String(describing: error), transient: false)
    }

    /// The store's error for an SQLite result code and its message.
    static func storeError(reason: SQLiteError.Reason, message: String) -> StoreError {
        let failure = DatabaseFailure.classify(sqlite: reason)
        let code: StoreError.Code
        switch reason {
        case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot: code = .sqliteBusy
        case .locked, .lockedBySharedCache, .lockedVirtualTable: code = .sqliteLocked
        case .tooBig: code = StoreError.Code("sqlite_too_big")
        case .mismatch: code = StoreError.Code("sqlite_mismatch")
        case .range: code = StoreError.Code("sqlite_range")
        case .full: code = .sqliteFull
        default: code = failure == .data ? .sqliteConstraint : .sqlite
        }
        return StoreError(code: code, message: code == .sqlite ? "\(reason): \(message)" : message, failure: failure)
    }
}
