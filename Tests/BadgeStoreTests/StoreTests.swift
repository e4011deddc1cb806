import BadgeCore
import BadgeModel
import BadgeSupport
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("Store behaviour")
struct StoreTests {
    @Test(arguments: Backend.allCases)
    func sameEventTwiceInOneBatchHasOneEffect(backend: Backend) async throws {
        try await withStore(backend) { store in
            let events = [register("d1", token: tokenA), follow("n1", at: 1), follow("n1", at: 1)]
            let applied = try await store.apply(events, policy: .unseen)
            #expect(applied.map(\.duplicate) == [false, false, true])
            #expect(applied[2].pushes.isEmpty)
            let snapshot = try await store.snapshot(user: "u-alice")
            #expect(snapshot.counts == Counts(unreadNotifications: 1, unseenNotifications: 1))
            #expect(snapshot.badgeVersion == 1)
            #expect(try await store.pendingPushes(limit: 100).count == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func sameEventInTwoBatchesHasOneEffect(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply([register("d1", token: tokenA), follow("n1", at: 1)], policy: .unseen)
            let again = try await store.apply([follow("n1", at: 1), register("d1", token: tokenA)], policy: .unseen)
            #expect(again.map(\.duplicate) == [true, true])
            #expect(again.allSatisfy { $0.pushes.isEmpty })
            let read = Event(
                id: "r1", type: .notificationRead, recipient: "u-alice", occurredAt: at(2), notificationIDs: ["n1"])
            _ = try await store.apply([read], policy: .unseen)
            #expect(try await store.apply([read], policy: .unseen)[0].duplicate)
            let snapshot = try await store.snapshot(user: "u-alice")
            #expect(snapshot.counts == .zero)
            #expect(snapshot.badgeVersion == 2)
            #expect(try await store.pendingPushes(limit: 100).map(\.push.badgeVersion) == [0, 1, 2])
        }
    }

    /// A batch that fails in the middle (a failing statement injected before its third event) leaves no
    /// trace: no counts, no devices, no outbox rows, no processed ids; the same batch then applies normally.
    @Test(arguments: Backend.allCases)
    func failedBatchRollsBack(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply([register("d0", token: tokenB), follow("n0", at: 0)], policy: .unseen)
            let before = try await store.snapshot(user: "u-alice")
            let outboxBefore = try await store.pendingPushes(limit: 100)

            let batch = [
                register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2),
                Event(id: "r1", type: .notificationsReadAll, recipient: "u-alice", occurredAt: at(3)),
                follow("n3", at: 4, to: "u-zed"),
            ]
            setBeforeEvent(store) { index, sql in
                if index == 2 { try await sql.execute("SELECT no_such_column FROM no_such_table") }
            }
            await #expect {
                try await store.apply(batch, policy: .unseen)
            } throws: { error in
                (error as? StoreError)?.transient == false
            }
            setBeforeEvent(store, nil)

            #expect(try await store.snapshot(user: "u-alice") == before)
            #expect(try await store.snapshot(user: "u-zed") == UserSnapshot(user: "u-zed"))
            #expect(try await store.pendingPushes(limit: 100) == outboxBefore)

            var model = InboxModel()
            _ = modelPushes(&model, [register("d0", token: tokenB), follow("n0", at: 0)])
            let applied = try await store.apply(batch, policy: .unseen)
            #expect(applied.allSatisfy { !$0.duplicate })
            #expect(pushes(applied) == modelPushes(&model, batch))
            expectMatches(try await store.snapshot(user: "u-alice"), model, "after retry")
        }
    }

    /// The connection dies mid-batch (the server terminates it): the error is transient, nothing of the batch
    /// remains, and the retried batch applies normally on a new connection.
    @Test func lostConnectionMidBatchIsTransientAndRollsBack() async throws {
        try await withStore(.postgres) { store in
            let batch = [register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2)]
            setBeforeEvent(store) { index, sql in
                if index == 2 { try await sql.execute("SELECT pg_terminate_backend(pg_backend_pid())") }
            }
            await #expect {
                try await store.apply(batch, policy: .unseen)
            } throws: { error in
                (error as? StoreError)?.transient == true
            }
            setBeforeEvent(store, nil)
            #expect(try await store.snapshot(user: "u-alice") == UserSnapshot(user: "u-alice"))
            #expect(try await store.pendingPushes(limit: 100).isEmpty)
            let applied = try await store.apply(batch, policy: .unseen)
            #expect(applied.allSatisfy { !$0.duplicate })
            #expect(pushes(applied).map(\.badge) == [0, 1, 2])
        }
    }

    @Test(arguments: Backend.allCases)
    func migratingTwiceIsHarmless(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply([register("d1", token: tokenA), follow("n1", at: 1)], policy: .unseen)
            try await store.migrate()
            try await store.migrate()
            #expect(try await store.snapshot(user: "u-alice").counts.unreadNotifications == 1)
            #expect(try await migrationVersions(store) == Schema.migrations.map(\.version))
        }
    }

    @Test(arguments: Backend.allCases)
    func concurrentMigrationsAreSafe(backend: Backend) async throws {
        try await withStores(backend, count: 3, migrate: false) { stores in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in stores {
                    group.addTask { try await store.migrate() }
                }
                try await group.waitForAll()
            }
            for (index, store) in stores.enumerated() {
                _ = try await store.apply([follow("n\(index)", at: Int64(index))], policy: .unseen)
                #expect(try await migrationVersions(store) == Schema.migrations.map(\.version))
            }
            #expect(try await stores[0].snapshot(user: "u-alice").counts.unreadNotifications == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func deactivatedDeviceGetsNoMorePushes(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [register("d1", token: tokenA), register("d2", token: tokenB), follow("n1", at: 1)], policy: .unseen)
            #expect(try await store.pendingPushes(limit: 100).count == 4)
            try await store.recordDeliveries(DeliveryRecord(deadTokens: [tokenA]))
            let pending = try await store.pendingPushes(limit: 100)
            #expect(pending.map(\.push.token) == [tokenB, tokenB])
            let applied = try await store.apply([follow("n2", at: 2)], policy: .unseen)
            #expect(pushes(applied).map(\.token) == [tokenB])
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.token) == [tokenB])
            // Registering it again revives it.
            _ = try await store.apply([register("d3", token: tokenA)], policy: .unseen)
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.token) == [tokenA, tokenB])
        }
    }

    @Test(arguments: Backend.allCases)
    func pendingPushesPagesInOrder(backend: Backend) async throws {
        try await withStore(backend) { store in
            let events = [register("d1", token: tokenA)] + (1...7).map { follow("n\($0)", at: Int64($0)) }
            let planned = try await store.apply(events, policy: .unread).flatMap(\.pushes)
            var seen: [OutboxPush] = []
            while true {
                let page = try await store.pendingPushes(limit: 3)
                if page.isEmpty { break }
                seen += page
                try await store.recordDeliveries(DeliveryRecord(sent: page.map(\.id)))
            }
            #expect(seen == planned)
            #expect(seen.map(\.push.badge) == Array(0...7))
        }
    }

    @Test func factoryParsesURLs() throws {
        #expect(try StoreFactory.sqlitePath(from: "sqlite:/var/lib/badgepipe.db") == "/var/lib/badgepipe.db")
        #expect(try StoreFactory.sqlitePath(from: "sqlite:///tmp/x.sqlite") == "/tmp/x.sqlite")
        #expect(try StoreFactory.sqlitePath(from: "sqlite:data/x.sqlite") == "data/x.sqlite")
        #expect(try StoreFactory.sqlitePath(from: "sqlite::memory:") == nil)
        #expect(throws: StoreError.self) { try StoreFactory.sqlitePath(from: "mysql://x") }
        #expect(throws: StoreError.self) { try StoreFactory.make(url: "redis://x", logger: testLogger) }
        #expect(
            StoreFactory.makeOrNil("postgresql://u:p%40ss@db.example:6543/app?schema=s1") is PostgresStore)
        let parsed = try PostgresURL("postgres://u:p%40ss@db.example:6543/app?schema=s1&sslmode=disable")
        #expect(parsed.configuration.host == "db.example")
        #expect(parsed.configuration.port == 6543)
        #expect(parsed.configuration.username == "u")
        #expect(parsed.configuration.password == "p@ss")
        #expect(parsed.configuration.database == "app")
        #expect(parsed.schema == "s1")
        #expect(throws: StoreError.self) { try PostgresURL("postgres://db.example/app") }
        func idleTimeout(_ url: String) throws -> String? {
            try PostgresURL(url).configuration.options.additionalStartupParameters
                .first { $0.0 == "idle_in_transaction_session_timeout" }?.1
        }
        #expect(try idleTimeout("postgres://u@db.example/app") == "2000")
        #expect(try idleTimeout("postgres://u@db.example/app?idle_in_transaction_timeout_ms=0") == "0")
        #expect(throws: StoreError.self) {
            try PostgresURL("postgres://u@db.example/app?idle_in_transaction_timeout_ms=soon")
        }
        func statementTimeout(_ url: String) throws -> String? {
            try PostgresURL(url).configuration.options.additionalStartupParameters
                .first { $0.0 == "statement_timeout" }?.1
        }
        #expect(try statementTimeout("postgres://u@db.example/app") == "9000")
        #expect(try statementTimeout("postgres://u@db.example/app?statement_timeout_ms=0") == "0")
        #expect(throws: StoreError.self) { try PostgresURL("postgres://u@db.example/app?statement_timeout_ms=-1") }
        #expect(try PostgresURL("postgres://u@db.example/app").preparedStatements)
        #expect(try PostgresURL("postgres://u@db.example/app?prepared_statements=on").preparedStatements)
        #expect(try !PostgresURL("postgres://u@db.example/app?prepared_statements=off").preparedStatements)
        #expect(throws: StoreError.self) { try PostgresURL("postgres://u@db.example/app?prepared_statements=yes") }
    }

    @Test func sslModesFollowLibpqAndTheDefaultVerifiesARemoteServer() throws {
        #expect(try PostgresURL("postgres://u@db.example/app").sslMode == "verify-full")
        #expect(try PostgresURL("postgres://u@127.0.0.1/app").sslMode == "prefer")
        #expect(try PostgresURL("postgres://u@localhost/app").sslMode == "prefer")
        #expect(try PostgresURL("postgres://u@[::1]/app").sslMode == "prefer")
        // A name that merely starts like a loopback address is another host: its certificate is checked.
        #expect(try PostgresURL("postgres://u@127.db.example.com/app").sslMode == "verify-full")
        #expect(try PostgresURL("postgres://u@127.0.0.1.example.com/app").sslMode == "verify-full")
        #expect(try PostgresURL("postgres://u@db.example/app?sslmode=require").sslMode == "require")
        #expect(throws: StoreError.self) { try PostgresURL("postgres://u@db.example/app?sslmode=bogus") }
        #expect(throws: StoreError.self) {
            try PostgresURL("postgres://u@db.example/app?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt")
        }
        #expect(throws: StoreError.self) {
            try PostgresURL("postgres://u@db.example/app?sslmode=require&sslrootcert=\(testPostgresCA)")
        }
    }

    /// Runs `SELECT ssl FROM pg_stat_ssl` for the store's own session, through a store made from `url`.
    private func sessionUsesTLS(_ url: String, within limit: Duration = .seconds(20)) async throws -> Bool {
        let parsed = try PostgresURL(url)
        let store = PostgresStore(configuration: parsed.configuration, schema: nil, logger: testLogger)
        return try await withThrowingTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await store.run()
                return nil
            }
            defer { group.cancelAll() }
            let ssl = try await withTimeLimit(limit) {
                try await store.database.transaction { sql in
                    try await sql.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", [])
                }
            }
            try await store.close()
            return try ssl.first?["ssl"].bool == true
        }
    }

    @Test func verifyFullReachesTheLocalServerOverTLSWithItsRootAndRefusesWithoutIt() async throws {
        let base = testDatabaseURL.split(separator: "?").first.map(String.init) ?? testDatabaseURL
        #expect(try await sessionUsesTLS(base + "?sslmode=verify-full&sslrootcert=\(testPostgresCA)"))
        #expect(try await sessionUsesTLS(base + "?sslmode=require"))
        #expect(try await !sessionUsesTLS(base + "?sslmode=disable"))
        // The system's roots do not know the test CA: the server's certificate is refused, nothing is sent (the pool
        // keeps trying, logging CERTIFICATE_VERIFY_FAILED, and the store waits: a worker is not ready meanwhile).
        await #expect(throws: (any Error).self) {
            _ = try await sessionUsesTLS(base + "?sslmode=verify-full", within: .seconds(5))
        }
    }

    @Test func aStatementThatRunsTooLongIsEndedByTheServerTransientlyAndItsLocksGoWithIt() async throws {
        // What a claim stuck behind a lock (or on a starved server) looks like: the server ends it, so that a retry
        // does not queue behind a statement the worker already gave up on.
        try await withPostgresStore(query: "statement_timeout_ms=300", schemaPrefix: "stmt") { store in
            var failure: (any Error)?
            do {
                try await store.database.transaction { sql in
                    try await sql.execute("SELECT pg_sleep(2)")
                }
            } catch {
                failure = error
            }
            #expect((failure as? StoreError)?.transient == true, "\(String(describing: failure))")
            #expect((failure as? StoreError)?.code == .sqlState("57014"), "\(String(describing: failure))")
            _ = try await store.apply([register("d1", token: tokenA)], policy: .unseen)
        }
    }

    @Test func aPostgresSessionIdleInsideATransactionIsCutOffAndItsLocksGoWithIt() async throws {
        // What a worker frozen mid-transaction looks like to the server: it holds a row lock and sends nothing.
        try await withPostgresStore(query: "idle_in_transaction_timeout_ms=300", schemaPrefix: "idle") { store in
            _ = try await store.apply([register("d1", token: tokenA)], policy: .unseen)
            var failure: (any Error)?
            do {
                try await store.database.transaction { sql in
                    try await sql.execute("SELECT 1 FROM users WHERE user_id = 'u-alice' FOR UPDATE")
                    try await Task.sleep(for: .milliseconds(900))
                    try await sql.execute("SELECT 1")
                }
            } catch {
                failure = error
            }
            // The server ended the session: the transaction fails, transiently (a worker retries it elsewhere).
            #expect((failure as? StoreError)?.transient == true, "\(String(describing: failure))")
            // The lock went with the session.
            _ = try await store.apply([follow("n1", at: 1)], policy: .unseen)
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 1)
        }
    }

    /// Runs `body` on a migrated PostgreSQL store (two connections at most) in a fresh schema named after
    /// `schemaPrefix`, its URL the test database's with `query`; drops the schema and closes the store afterwards.
    private func withPostgresStore(
        query: String, schemaPrefix: String, _ body: (PostgresStore) async throws -> Void
    ) async throws {
        var configuration = try PostgresURL(testDatabaseURL + "?" + query).configuration
        configuration.options.maximumConnections = 2
        let name = "\(schemaPrefix)_\(UInt32.random(in: 0...UInt32.max))"
        let store = PostgresStore(configuration: configuration, schema: name, logger: testLogger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            let result: Result<Void, any Error>
            do {
                try await store.migrate()
                result = .success(try await body(store))
            } catch {
                result = .failure(error)
            }
            _ = try? await store.database.transaction { sql in
                try await sql.execute("DROP SCHEMA IF EXISTS \(quoteIdentifier(name)) CASCADE")
            }
            try await store.close()
            try await group.waitForAll()
            try result.get()
        }
    }

    @Test func inMemorySQLiteWorks() async throws {
        let store = try StoreFactory.make(url: "sqlite::memory:", logger: testLogger)
        try await store.migrate()
        let applied = try await store.apply([register("d1", token: tokenA), follow("n1", at: 1)], policy: .unseen)
        #expect(pushes(applied).map(\.badge) == [0, 1])
        try await store.close()
    }

    /// SQLite's "database is locked": a second store on the same file cannot write while the first holds a
    /// write transaction; after its busy timeout it fails with a transient error and a retry succeeds.
    @Test func sqliteBusyIsTransient() async throws {
        let database = TestDatabase(.sqlite)
        let holder = SQLiteStore(path: database.sqlitePath, logger: testLogger)
        let other = SQLiteStore(path: database.sqlitePath, busyTimeoutMilliseconds: 1, logger: testLogger)
        try await holder.migrate()
        let gate = Gate()
        let release = Gate()
        holder.hooks.beforeEvent = { _, _ in
            await gate.open()
            await release.wait()
        }
        let holding = Task { try await holder.apply([follow("n1", at: 1)], policy: .unseen) }
        await gate.wait()
        await #expect {
            try await other.apply([follow("n2", at: 2)], policy: .unseen)
        } throws: { error in
            (error as? StoreError)?.transient == true
        }
        await release.open()
        _ = try await holding.value
        _ = try await other.apply([follow("n2", at: 2)], policy: .unseen)
        #expect(try await other.snapshot(user: "u-alice").counts.unreadNotifications == 2)
        try await holder.close()
        try await other.close()
        await database.drop(using: holder)
    }
}

extension StoreFactory {
    static func makeOrNil(_ url: String) -> (any SQLBackedStore)? {
        try? make(url: url, logger: testLogger)
    }
}

/// A one-shot async gate.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
}

/// The versions recorded in `schema_migrations`.
func migrationVersions(_ store: any SQLBackedStore) async throws -> [Int64] {
    try await store.sqlBackend.database.transaction { sql in
        try await sql.query("SELECT version FROM schema_migrations ORDER BY version", []).compactMap {
            try $0["version"].int64
        }
    }
}
