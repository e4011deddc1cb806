import SQLiteNIO
import Testing

@_spi(Testing) @testable import BadgeStore

/// Every database error falls in exactly one class (``DatabaseFailure``); these pin the class of each SQLSTATE and
/// SQLite result code the worker meets in production.
@Suite struct DatabaseFailureTests {
    @Test(arguments: [
        // The event's data.
        ("22021", DatabaseFailure.data), ("22001", .data), ("22003", .data), ("22P02", .data), ("23505", .data),
        ("23502", .data), ("23514", .data), ("54000", .data),
        // The connection or the transaction: retried at once.
        ("08006", .connection), ("08001", .connection), ("08003", .connection), ("40001", .connection),
        ("40P01", .connection), ("55P03", .connection), ("57014", .connection), ("25P03", .connection),
        ("26000", .connection),
        // The database cannot write now: waited for.
        ("25006", .unavailable), ("53100", .unavailable), ("53200", .unavailable), ("53300", .unavailable),
        ("53400", .unavailable), ("57P01", .unavailable), ("57P02", .unavailable), ("57P03", .unavailable),
        ("58030", .unavailable),
        // Bugs and settings.
        ("42P01", .other), ("42601", .other), ("0A000", .other), ("XX000", .other), ("", .other),
    ])
    func postgresClass(state: String, expected: DatabaseFailure) {
        #expect(DatabaseFailure.classify(sqlState: state) == expected)
    }

    @Test(arguments: [
        (SQLiteError.Reason.constraint, DatabaseFailure.data), (.constraintUniqueFailed, .data),
        (.constraintNotNullFailed, .data), (.tooBig, .data), (.mismatch, .data), (.range, .data),
        (.busy, .connection), (.busyTimeout, .connection), (.locked, .connection), (.schema, .connection),
        (.full, .unavailable), (.readOnly, .unavailable), (.readonlyDirectory, .unavailable),
        (.ioError, .unavailable), (.ioErrorFailedWrite, .unavailable), (.ioErrorFailedSync, .unavailable),
        (.noMemory, .unavailable), (.cantOpen, .unavailable),
        (.error, .other), (.misuse, .other), (.corrupt, .other), (.notADatabase, .other),
    ])
    func sqliteClass(reason: SQLiteError.Reason, expected: DatabaseFailure) {
        #expect(DatabaseFailure.classify(sqlite: reason) == expected)
    }

    @Test func retriedClasses() {
        #expect(DatabaseFailure.allCases.filter(\.isRetried) == [.connection, .unavailable])
    }

    /// The store's errors carry the class: SQLite's "disk full" is an unavailable database, not bad data.
    @Test func sqliteErrorsCarryTheirClass() {
        let full = SQLiteTransactor.storeError(reason: .full, message: "database or disk is full")
        #expect(full.failure == .unavailable)
        #expect(full.code == .sqliteFull)
        #expect(full.transient)
        #expect(!full.refusesInput)
        let constraint = SQLiteTransactor.storeError(reason: .constraintCheckFailed, message: "CHECK")
        #expect(constraint.failure == .data)
        #expect(constraint.refusesInput)
        #expect(!constraint.transient)
    }

    /// Running out of time (PostgreSQL's statement or idle-in-transaction timeout, or the worker's own limit on an
    /// attempt) is told apart from the other retried failures: a batch that ran out of time is applied in halves.
    @Test func runningOutOfTime() {
        for state in ["57014", "25P03"] {
            let error = StoreError(
                code: .sqlState(state), message: "timeout", failure: DatabaseFailure.classify(sqlState: state))
            #expect(error.ranOutOfTime)
            #expect(error.transient)
        }
        #expect(StoreError(code: .timeout, message: "apply took longer than 10 s", transient: true).ranOutOfTime)
        for state in ["40001", "40P01", "08006", "25006", "23505"] {
            let error = StoreError(
                code: .sqlState(state), message: "other", failure: DatabaseFailure.classify(sqlState: state))
            #expect(!error.ranOutOfTime)
        }
        #expect(!StoreError(code: .connectionClosed, message: "closed", transient: true).ranOutOfTime)
    }
}
