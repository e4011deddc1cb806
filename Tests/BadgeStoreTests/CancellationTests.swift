import Testing

@_spi(Testing) @testable import BadgeStore

/// A transaction cancelled half-way (an attempt past its timeout, a shutdown past its bound) leaves nothing behind.
@Suite("Cancelled transactions")
struct CancellationTests {
    @Test(arguments: Backend.allCases)
    func aCancelledTransactionRollsBackAndTheNextOneWorks(backend: Backend) async throws {
        try await withStore(backend) { store in
            let database = (store as! any SQLBackedStore).sqlBackend.database
            let cancelled = Task {
                try await database.transaction { sql in
                    try await sql.execute("INSERT INTO users (user_id) VALUES ('u-cancelled')")
                    try await Task.sleep(for: .seconds(30))
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            cancelled.cancel()
            _ = await cancelled.result
            // The next transaction begins (none was left open on the connection) and sees no trace of the first.
            let rows = try await database.transaction { sql in
                try await sql.query("SELECT count(*) AS n FROM users WHERE user_id = 'u-cancelled'", [])
            }
            #expect(try rows.first?["n"].int64 == 0)
        }
    }
}
