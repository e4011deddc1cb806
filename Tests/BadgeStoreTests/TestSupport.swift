import BadgeCore
import BadgeModel
import BadgeWire
import Foundation
import Logging
import PostgresNIO
import TestServices
import Testing

@_spi(Testing) @testable import BadgeStore

/// The two backends every shared test runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// `BADGEPIPE_TEST_DATABASE_URL`, or the local development database.
let testDatabaseURL = TestServices.databaseURL

/// The CA that signed the local PostgreSQL's certificate (`scripts/services` makes it): `BADGEPIPE_TEST_POSTGRES_CA`,
/// or where `scripts/services` puts it by default.
let testPostgresCA = TestServices.postgresCA

/// Errors only.
let testLogger: Logger = {
    var logger = Logger(label: "badgestore-tests")
    logger.logLevel = .error
    return logger
}()

/// A fresh, private database location: an SQLite temp file or a PostgreSQL schema.
struct TestDatabase: Sendable {
    let backend: Backend
    let name: String

    init(_ backend: Backend) {
        self.backend = backend
        let suffix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        self.name = "badgestore_test_\(suffix)"
    }

    var sqlitePath: String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name).sqlite").path
    }

    /// A new store on this location (not migrated, not running).
    func makeStore() throws -> any SQLBackedStore {
        switch backend {
        case .sqlite:
            return SQLiteStore(path: sqlitePath, logger: testLogger)
        case .postgres:
            var configuration = try PostgresURL(testDatabaseURL).configuration
            configuration.options.maximumConnections = 4
            return PostgresStore(configuration: configuration, schema: name, logger: testLogger)
        }
    }

    /// Drops the schema or deletes the file, through `store` (still open) on PostgreSQL.
    func drop(using store: any SQLBackedStore) async {
        switch backend {
        case .sqlite:
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: sqlitePath + suffix)
            }
        case .postgres:
            guard let store = store as? PostgresStore else { return }
            _ = try? await store.database.transaction { sql in
                try await sql.execute("DROP SCHEMA IF EXISTS \(quoteIdentifier(name)) CASCADE")
            }
        }
    }
}

/// Runs `body` with `count` running stores on one fresh database (migrated unless `migrate` is false), then
/// closes them and drops the database.
func withStores<T: Sendable>(
    _ backend: Backend, count: Int = 1, migrate: Bool = true,
    _ body: @Sendable ([any SQLBackedStore]) async throws -> T
) async throws -> T {
    let database = TestDatabase(backend)
    let stores = try (0..<count).map { _ in try database.makeStore() }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        for store in stores {
            group.addTask { await store.run() }
        }
        let result: Result<T, any Error>
        do {
            if migrate {
                for store in stores { try await store.migrate() }
            }
            result = .success(try await body(stores))
        } catch {
            result = .failure(error)
        }
        await database.drop(using: stores[0])
        for store in stores {
            try? await store.close()
        }
        try await group.waitForAll()
        return try result.get()
    }
}

/// Runs `body` with one running, migrated store on a fresh database.
func withStore<T: Sendable>(
    _ backend: Backend, _ body: @Sendable (any SQLBackedStore) async throws -> T
) async throws -> T {
    try await withStores(backend) { stores in try await body(stores[0]) }
}

/// Sets the test hook that runs before each event of a batch.
func setBeforeEvent(
    _ store: any SQLBackedStore, _ hook: (@Sendable (Int, any SQLExecutor) async throws -> Void)?
) {
    store.sqlBackend.hooks.beforeEvent = hook
}

/// Applies `events`, retrying the whole batch on transient errors (as a worker does).
func applyRetrying(
    _ store: any SQLBackedStore, _ events: [Event], policy: BadgePolicy
) async throws -> [AppliedEvent] {
    var attempt = 0
    while true {
        do {
            return try await store.apply(events, policy: policy)
        } catch let error as StoreError where error.transient && attempt < 50 {
            attempt += 1
        }
    }
}

// MARK: - Fixtures and builders

enum Fixtures {
    static func names() -> [String] {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("Fixtures"),
            let files = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [] }
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return Array(try Data(contentsOf: url))
    }
}

/// 2026-11-21T10:00:00Z.
let baseTime = Timestamp.parse("2026-11-21T10:00:00Z")!

func at(_ seconds: Int64) -> Timestamp {
    baseTime.adding(microseconds: seconds * 1_000_000)
}

let bob = EventActor(id: "u-bob", name: "Bob Stone", username: "bob")
let tokenA = "aaaa0000aaaa0000aaaa0000aaaa0000"
let tokenB = "bbbb1111bbbb1111bbbb1111bbbb1111"

func follow(_ id: String, at seconds: Int64, to recipient: String = "u-alice", actor: EventActor = bob) -> Event {
    Event(id: id, type: .follow, recipient: recipient, occurredAt: at(seconds), actor: actor)
}

func register(_ id: String, token: String, for recipient: String = "u-alice", at seconds: Int64 = 0) -> Event {
    Event(
        id: id, type: .deviceRegistered, recipient: recipient, occurredAt: at(seconds),
        device: DeviceInfo(token: token, provider: .apns, topic: "com.example.app", environment: .production))
}

/// The pushes of applied events, in order.
func pushes(_ applied: [AppliedEvent]) -> [PlannedPush] {
    applied.flatMap { $0.pushes.map(\.push) }
}

/// Applies `events` to `model` and returns the pushes, in order.
func modelPushes(_ model: inout InboxModel, _ events: [Event]) -> [PlannedPush] {
    events.flatMap { model.apply($0).pushes }
}

/// Checks the store's state of `user` against the model.
func expectMatches(
    _ snapshot: UserSnapshot, _ model: InboxModel, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let user = snapshot.user
    #expect(snapshot.counts == model.counts(of: user), "\(context): counts of \(user)", sourceLocation: sourceLocation)
    #expect(
        snapshot.badgeVersion == model.badgeVersion(of: user), "\(context): badge_version of \(user)",
        sourceLocation: sourceLocation)
    #expect(
        snapshot.badge(policy: model.policy) == model.badge(of: user), "\(context): badge of \(user)",
        sourceLocation: sourceLocation)
    #expect(
        snapshot.badgeEnabled == model.badgeEnabled(of: user), "\(context): badge_enabled of \(user)",
        sourceLocation: sourceLocation)
    #expect(
        snapshot.previews == model.previews(of: user), "\(context): previews of \(user)",
        sourceLocation: sourceLocation)
    #expect(
        snapshot.devices == model.activeDevices(of: user), "\(context): devices of \(user)",
        sourceLocation: sourceLocation)
}

/// Worker w1's lease on the only partition (a minute long).
func onlyLease(of store: any PipelineStore) async throws -> PartitionLease {
    let round = try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
    return try #require(round.leases.first)
}

/// Runs `statement` (no binds) on the store's database.
func execute(_ store: any PipelineStore, _ statement: String) async throws {
    let database = (store as! any SQLBackedStore).sqlBackend.database
    try await database.transaction { try await $0.execute(statement, []) }
}

extension DeliveryRecord {
    /// The record of a round in which every push `claim` took went out: sent at the versions they carried, and the
    /// rows the claim's push guard dropped removed, as a delivery round records them.
    static func sentAll(_ claim: ClaimedPushes) -> DeliveryRecord {
        DeliveryRecord(
            sent: claim.pushes.map(\.outbox.id),
            pushed: claim.pushes.map {
                DeliveryRecord.Pushed(token: $0.push.token, user: $0.push.recipient, version: $0.push.badgeVersion)
            },
            dropped: claim.dropped)
    }
}
