import AMQPClient
import BadgeCore
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import Testing

/// Valid events (by the contract) that a layer below refuses: the database, the HTTP client. Each culprit is
/// parked or dropped with its reason, and every other user's events in the same partition take effect.
@Suite("Poison isolation", .serialized, .timeLimit(.minutes(5)))
struct PoisonTests {
    static let goodToken = "eeee4444eeee4444eeee4444eeee4444eeee4444eeee4444eeee4444eeee4444"
    static let poisonToken = "ffff5555ffff5555ffff5555ffff5555ffff5555ffff5555ffff5555ffff5555"

    static func register(_ user: String, token: String, id: String, topic: String? = "com.example.test") -> JSONValue {
        var device: [(key: String, value: JSONValue)] = [("token", .string(token)), ("provider", "apns")]
        if let topic { device.append(("topic", .string(topic))) }
        return [
            "id": .string(id), "type": "device_registered", "recipient": .string(user),
            "occurred_at": "2026-11-21T09:00:00Z", "device": .object(device),
        ]
    }

    static func follow(_ user: String, id: String, second: Int) -> JSONValue {
        [
            "id": .string(id), "type": "follow", "recipient": .string(user),
            "occurred_at": .string("2026-11-21T10:00:\(String(format: "%02d", second))Z"),
            "actor": ["id": "u-bob", "name": "Bob"],
        ]
    }

    /// One partition, two users: one user's poison never holds up the other.
    @Test(arguments: Backend.allCases)
    func poisonEventsOfEachClassAreParkedWithTheirReasonAndTheirNeighboursTakeEffect(backend: Backend) async throws {
        try await Pipeline.with(backend: backend, partitions: 1) { pipeline in
            let (good, poisoned) = ("u-good", "u-poisoned")
            // The database refuses some data: a real constraint, as PostgreSQL refuses a NUL byte or an index row
            // that is too large. SQLite's RAISE(ABORT) in a trigger is its constraint error.
            if backend == .postgres {
                try pipeline.executeSQL(
                    "ALTER TABLE notifications ADD CONSTRAINT test_poison CHECK (id NOT LIKE 'poison-db%')")
            } else {
                try pipeline.executeSQL(
                    "CREATE TRIGGER test_poison BEFORE INSERT ON notifications WHEN NEW.id LIKE 'poison-db%' "
                        + "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END;")
            }
            try await pipeline.publish(Self.register(good, token: Self.goodToken, id: "good-d1"))
            try await pipeline.publish(Self.register(poisoned, token: Self.poisonToken, id: "poison-d1"))
            let culprits: [(event: JSONValue, reason: String)] = [
                (
                    Self.register(poisoned, token: String(repeating: "a", count: 4000), id: "poison-long-token"),
                    "invalid_field: field \"device.token\" must be at most 2048"
                ),
                (
                    Self.register(poisoned, token: Self.poisonToken, id: "poison-topic-crlf", topic: "com.x\r\nx-y: z"),
                    "invalid_field: field \"device.topic\""
                ),
                (
                    Self.register(poisoned, token: Self.poisonToken, id: "poison-topic-nul", topic: "com.x\u{0}"),
                    "invalid_field: field \"device.topic\""
                ),
                (
                    Self.follow(poisoned, id: "poison-db-1", second: 30),
                    backend == .postgres
                        ? "refused by the database: sqlstate_23514" : "refused by the database: sqlite_constraint"
                ),
            ]
            for (index, culprit) in culprits.enumerated() {
                try await pipeline.publish(Self.follow(good, id: "good-\(index)", second: index))
                try await pipeline.publish(culprit.event)
            }
            try await pipeline.publish(Self.follow(poisoned, id: "poison-fine", second: 40))
            try await pipeline.publish(Self.follow(good, id: "good-last", second: 50))
            try await pipeline.waitUntilQuiet()

            // Every event of the good user took effect, in order, with the right badges.
            let alerts = pipeline.acceptedPayloads(token: Self.goodToken).filter { $0["aps"]?["alert"] != nil }
            #expect(alerts.compactMap { $0["event_id"]?.stringValue } == (0..<4).map { "good-\($0)" } + ["good-last"])
            #expect(pipeline.lastBadge(token: Self.goodToken) == 5)
            // The poisoned user's valid events took effect too.
            #expect(try await pipeline.store.snapshot(user: poisoned).counts.unreadNotifications == 1)
            #expect(pipeline.lastBadge(token: Self.poisonToken) == 1)

            // Each culprit is parked with its reason, one line, its body unchanged.
            let parked = try await pipeline.parked()
            #expect(parked.count == culprits.count)
            for culprit in culprits {
                let id = culprit.event["id"]?.stringValue ?? ""
                let delivery = try #require(parked[id], "\(id) parked")
                let reason = delivery.properties.headers?["x-badgepipe-error"]?.stringValue ?? ""
                #expect(reason.hasPrefix(culprit.reason), "\(id): \(reason)")
                #expect(!reason.contains("\n"))
                #expect(delivery.body == culprit.event.serialized())
            }
        }
    }

    /// A push the HTTP client refuses to send (here the deployment's default topic holds a line break, so the
    /// `apns-topic` header value is invalid) fails for good, alone: it is not retried for ever, and the other
    /// device's pushes go out.
    @Test(arguments: Backend.allCases)
    func aPushTheHTTPClientRefusesFailsAloneAndForGood(backend: Backend) async throws {
        try await Pipeline.with(backend: backend, partitions: 1, apnsTopic: "com.example.test\r\nx-injected: 1") {
            pipeline in
            let user = "u-two-devices"
            try await pipeline.publish(Self.register(user, token: Self.poisonToken, id: "http-d1", topic: nil))
            try await pipeline.publish(Self.register(user, token: Self.goodToken, id: "http-d2"))
            for index in 0..<3 { try await pipeline.publish(Self.follow(user, id: "http-n\(index)", second: index)) }
            try await pipeline.waitUntilQuiet()
            #expect(pipeline.lastBadge(token: Self.goodToken) == 3)
            #expect(pipeline.sink.receivedPushes(token: Self.poisonToken).isEmpty, "never reached the provider")
            #expect(try await pipeline.store.pendingPushes(limit: 10).isEmpty, "dropped, not waiting for a retry")
        }
    }
}
