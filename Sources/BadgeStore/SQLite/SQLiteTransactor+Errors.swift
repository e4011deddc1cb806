import SQLiteNIO

extension SQLiteTransactor {
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? SQLiteError {
            switch error.reason {
            case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot:
                return StoreError(code: .sqliteBusy, message: error.message, transient: true)
            case .locked, .lockedBySharedCache, .lockedVirtualTable:
                return StoreError(code: .sqliteLocked, message: error.message, transient: true)
            case .constraint, .constraintCheckFailed, .constraintForeignKeyFailed, .constraintUserFunctionFailed,
                .constraintNotNullFailed, .constraintPrimaryKeyFailed, .constraintTriggerFailed,
                .constraintUniqueFailed, .constraintVirtualTableFailed, .constraintUniqueRowIDFailed,
                .constraintStrictDataTypeFailed:
                return StoreError(code: .sqliteConstraint, message: error.message, transient: false)
            case .tooBig:
                return StoreError(code: StoreError.Code("sqlite_too_big"), message: error.message, transient: false)
            case .mismatch:
                return StoreError(code: StoreError.Code("sqlite_mismatch"), message: error.message, transient: false)
            case .range:
                return StoreError(code: StoreError.Code("sqlite_range"), message: error.message, transient: false)
            default:
                return StoreError(code: .sqlite, message: "\(error.reason): \(error.message)", transient: false)
            }
        }
        return StoreError(code: .sqlite, message: String(describing: error), transient: false)
    }
}
