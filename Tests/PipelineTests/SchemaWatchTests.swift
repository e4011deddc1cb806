import BadgeCore
@_spi(Testing) import BadgeStore
import BadgeWorker
import Foundation
import Logging
import Testing

/// A running worker's schema watch: when a newer badgepipe applies a version that does not serve this code, the
/// watch ends with `schema_too_new` (stopping the worker's service group), and not before.
@Suite("Schema watch", .serialized, .timeLimit(.minutes(2)))
struct SchemaWatchTests {
    @Test(arguments: Backend.allCases)
    func aRunningWorkerStopsWhenTheSchemaMovesPastIt(backend: Backend) async throws {
        let url = try backend.freshURL()
        defer { backend.drop(url) }
        var logger = Logger(label: "schema-watch-test")
        logger.logLevel = .critical
        let store = try StoreFactory.make(url: url, logger: logger)
        let running = Task { await store.run() }
        defer { running.cancel() }
        try await store.migrate()
        let watch = SchemaWatch(store: store, interval: .milliseconds(100), logger: logger)
        let watching = Task { try await watch.run() }
        try await Task.sleep(for: .milliseconds(400))
        #expect(!watching.isCancelled)
        // As a newer badgepipe records a version that does not serve older code (from outside, as it would).
        let insert = "INSERT INTO schema_migrations (version, applied_at, serves_from) VALUES (1000, 0, 1000)"
        if url.hasPrefix("sqlite:") {
            try run(
                "/usr/bin/env",
                [
                    "python3", "-c",
                    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()",
                    String(url.dropFirst("sqlite:".count)), insert,
                ])
        } else {
            try run("/usr/bin/env", ["psql", url, "-q", "-v", "ON_ERROR_STOP=1", "-c", insert])
        }
        let started = ContinuousClock.now
        let result = await watching.result
        let error = #expect(throws: StoreError.self) { try result.get() }
        #expect(error?.code == .schemaTooNew)
        #expect(ContinuousClock.now - started < .seconds(5))
        try await store.close()
    }
}
