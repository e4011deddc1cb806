import Logging
import Synchronization
import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("PostgreSQL store start-up", .timeLimit(.minutes(1)))
struct StoreStartupTests {
    @Test func aStatementAskedForBeforeTheStoreRunsWaitsForItAndThePoolWarnsOfNothing() async throws {
        // A worker's services start at once: its first statements may come before the store's `run()` has started
        // the pools. They wait for it; postgres-nio would log a warning for a lease asked for before its `run()`.
        let logs = CapturedLogs()
        let store = PostgresStore(
            configuration: try PostgresURL(testDatabaseURL).configuration, schema: nil, logger: logs.logger)
        try await withThrowingTaskGroup(of: Int64?.self) { group in
            group.addTask {
                try await store.database.transaction { sql in
                    try await sql.query("SELECT 7::bigint AS seven", []).first?["seven"].int64
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            group.addTask {
                await store.run()
                return nil
            }
            let seven = try await group.next() ?? nil
            #expect(seven == 7)
            try await store.close()
            try await group.waitForAll()
        }
        #expect(logs.messages(atLeast: .warning).isEmpty, "\(logs.messages(atLeast: .warning))")
    }
}

@Suite("The pools' log filter")
struct PoolLogFilterTests {
    @Test func onlyTheEarlyLeaseWarningIsDropped() {
        let logs = CapturedLogs()
        let logger = PoolLogFilter.logger(logs.logger)
        logger.warning("\(PoolLogFilter.earlyLease)")
        logger.warning("a connection failed")
        logger.info("\(PoolLogFilter.earlyLease)")
        logger.debug("pool state")
        #expect(logs.messages(atLeast: .debug) == ["a connection failed", PoolLogFilter.earlyLease, "pool state"])
    }
}

/// A logger whose messages (`.debug` and up) a test can read back.
final class CapturedLogs: Sendable {
    private let entries = Mutex<[(level: Logger.Level, message: String)]>([])

    var logger: Logger {
        Logger(label: "captured") { _ in Handler(logs: self) }
    }

    /// The messages of `level` or above, in order.
    func messages(atLeast level: Logger.Level) -> [String] {
        entries.withLock { $0.filter { $0.level >= level }.map(\.message) }
    }

    private struct Handler: LogHandler {
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            logs.entries.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }
}
