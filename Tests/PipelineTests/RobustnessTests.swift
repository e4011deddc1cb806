import AMQPClient
import BadgeCore
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import Testing

/// Bad input, provider faults and redelivery, end to end.
@Suite("Pipeline robustness", .serialized, .timeLimit(.minutes(5)))
struct RobustnessTests {
    static let token = "cccc2222cccc2222cccc2222cccc2222cccc2222cccc2222cccc2222cccc2222"

    static func register(_ user: String, token: String = token, id: String) -> JSONValue {
        [
            "id": .string(id), "type": "device_registered", "recipient": .string(user),
            "occurred_at": "2026-11-21T09:00:00Z",
            "device": ["token": .string(token), "provider": "apns", "topic": "com.example.test"],
        ]
    }

    static func follow(_ user: String, id: String, second: Int = 1) -> JSONValue {
        [
            "id": .string(id), "type": "follow", "recipient": .string(user),
            "occurred_at": .string(
                "2026-11-21T10:\(String(format: "%02d", second / 60)):\(String(format: "%02d", second % 60))Z"),
            "actor": ["id": "u-bob", "name": "Bob"],
        ]
    }

    /// Outbox rows the worker cannot read (here a provider it does not know, in every partition, for a device that
    /// also has valid pushes) are moved to `refused_pushes` with their reason; every valid push still goes out, to
    /// that device and to another, and the outbox ends empty.
    @Test(arguments: Backend.allCases)
    func unreadableOutboxRowsAreRefusedAndEveryValidPushGoesOut(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            let other = "dddd3333dddd3333dddd3333dddd3333dddd3333dddd3333dddd3333dddd3333"
            try await pipeline.publish(Self.register("u-refused", id: "r-d1"))
            try await pipeline.publish(Self.register("u-neighbour", token: other, id: "r-d2"))
            try await pipeline.waitUntilQuiet()
            for partition in 0..<pipeline.topology.partitions {
                try pipeline.executeSQL(
                    """
                    INSERT INTO outbox (user_id, event_id, event_type, token, provider, topic, kind, event_json,
                        unread_notifications, unseen_notifications, unread_messages, badge, badge_version, previews,
                        partition_id, created_at)
                    VALUES ('u-refused', 'r-x\(partition)', 'follow', '\(Self.token)', 'huawei', 'com.example.test',
                        'badge', NULL, 0, 0, 0, 0, 1, TRUE, \(partition), 0)
                    """)
            }
            for second in 1...3 {
                try await pipeline.publish(Self.follow("u-refused", id: "r-n\(second)", second: second))
                try await pipeline.publish(Self.follow("u-neighbour", id: "r-m\(second)", second: second))
            }
            // Until every push is recorded, not only until the sink is quiet: the valid pushes to the refused rows'
            // device wait for the rows in the other partitions to go first, and a held-back push is looked at again
            // only every `--delivery-held-back-poll` (500 ms), which on a loaded machine can outlast the quiet period.
            try await pipeline.waitUntilQuiet(outboxEmpty: true)

            #expect(pipeline.acceptedPayloads(token: Self.token).compactMap { $0["aps"]?["alert"] }.count == 3)
            #expect(pipeline.lastBadge(token: Self.token) == 3)
            #expect(pipeline.acceptedPayloads(token: other).compactMap { $0["aps"]?["alert"] }.count == 3)
            #expect(pipeline.lastBadge(token: other) == 3)
            #expect(pipeline.sink.receivedPushes(token: Self.token).allSatisfy { $0.provider == .apns })
            let refused = try pipeline.querySQL(
                "SELECT partition_id, user_id, reason FROM refused_pushes ORDER BY partition_id")
            #expect(
                refused == (0..<pipeline.topology.partitions).map { "\($0)|u-refused|unknown_provider" }, "\(refused)")
            #expect(try await pipeline.store.pendingPushes(limit: 100).isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func invalidMessagesAreParkedWithTheirReasonAndValidOnesTakeEffect(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            let user = "u-bad-input"
            try await pipeline.publish(Self.register(user, id: "bad-d1"))
            let invalid: [(body: [UInt8], contentType: String?, reason: String)] = [
                (Array("this is not json".utf8), "application/json", "invalid_json"),
                (
                    Array(
                        #"{"id":"x1","type":"follow","recipient":"u-bad-input","occurred_at":"2026-11-21T10:00:00Z"}"#
                            .utf8), nil, "missing_field"
                ),
                (
                    Array(
                        #"{"id":"x2","type":"like","recipient":"u-bad-input","occurred_at":"2026-11-21T10:00:00Z"}"#
                            .utf8), nil, "unknown_type"
                ),
                ([UInt8](repeating: UInt8(ascii: " "), count: 70_000), nil, "too_large"),
                ([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D], nil, "bad_encoding"),
                (Array(#"{"id":"x3"}"#.utf8), "text/plain", "bad_content_type"),
            ]
            for (index, bad) in invalid.enumerated() {
                try await pipeline.publish(Self.follow(user, id: "good-\(index)", second: index))
                try await pipeline.publish(bad.body, recipient: user, id: "bad-\(index)", contentType: bad.contentType)
            }
            try await pipeline.publish(Self.follow(user, id: "good-last", second: 59))
            try await pipeline.waitUntilQuiet()

            // Every valid event took effect.
            #expect(pipeline.lastBadge(token: Self.token) == invalid.count + 1)
            let snapshot = try await pipeline.store.snapshot(user: user)
            #expect(snapshot.counts.unreadNotifications == invalid.count + 1)

            // Every invalid one is parked with its reason, original body (one over 64 KiB too) and properties.
            let channel = try await pipeline.connection.openChannel()
            var parked: [String: AMQPMessage] = [:]
            while let delivery = try await channel.get(queue: pipeline.topology.deadQueueName, noAck: true) {
                parked[delivery.properties.messageID ?? "?"] = delivery
            }
            #expect(parked.count == invalid.count)
            for (index, bad) in invalid.enumerated() {
                let delivery = try #require(parked["bad-\(index)"])
                let reason = delivery.properties.headers?["x-badgepipe-error"]?.stringValue ?? ""
                #expect(reason.hasPrefix(bad.reason), "bad-\(index): \(reason)")
                #expect(!reason.contains("\n"))
                #expect(delivery.body == bad.body, "bad-\(index): \(delivery.body.count) bytes parked")
                if bad.reason == "too_large" { #expect(reason.contains("70000 bytes"), "\(reason)") }
                #expect(delivery.properties.contentType == bad.contentType)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func aRedeliveredOrRepublishedEventHasNoSecondEffect(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            let user = "u-dupes"
            try await pipeline.publish(Self.register(user, id: "dup-d1"))
            for _ in 0..<3 { try await pipeline.publish(Self.follow(user, id: "dup-n1")) }
            try await pipeline.publish(Self.follow(user, id: "dup-n2", second: 2))
            try await pipeline.waitUntilQuiet()
            let alerts = pipeline.acceptedPayloads(token: Self.token).filter { $0["aps"]?["alert"] != nil }
            #expect(alerts.compactMap { $0["event_id"]?.stringValue } == ["dup-n1", "dup-n2"])
            #expect(pipeline.lastBadge(token: Self.token) == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func aTokenAnswered410IsDeactivated(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            let user = "u-gone"
            let other = "dddd3333dddd3333dddd3333dddd3333dddd3333dddd3333dddd3333dddd3333"
            try await pipeline.publish(Self.register(user, id: "gone-d1"))
            try await pipeline.publish(Self.register(user, token: other, id: "gone-d2"))
            try await pipeline.waitUntilQuiet()
            pipeline.sink.addFault(try Fault(token: Self.token, status: 410, reason: "Unregistered"))
            try await pipeline.publish(Self.follow(user, id: "gone-n1"))
            try await pipeline.waitUntilQuiet()
            try await pipeline.publish(Self.follow(user, id: "gone-n2", second: 2))
            try await pipeline.waitUntilQuiet()
            let dead = pipeline.sink.receivedPushes(token: Self.token)
            #expect(dead.filter { $0.status == 410 }.count == 1)
            #expect(dead.last?.status == 410, "nothing more was sent to the dead token")
            #expect(pipeline.lastBadge(token: other) == 2)
            let snapshot = try await pipeline.store.snapshot(user: user)
            #expect(snapshot.devices.map(\.token) == [other])
        }
    }

    @Test(arguments: Backend.allCases)
    func throttledAndFailingProvidersStillGetEveryPushOnce(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            let user = "u-flaky"
            try await pipeline.publish(Self.register(user, id: "flaky-d1"))
            try await pipeline.waitUntilQuiet()
            pipeline.sink.addFault(try Fault(status: 503, reason: "ServiceUnavailable", rate: 0.3))
            let count = 60
            for index in 0..<count {
                try await pipeline.publish(Self.follow(user, id: "flaky-\(index)", second: index))
            }
            try await pipeline.waitUntilQuiet()
            let deliveries = pipeline.sink.receivedPushes(token: Self.token)
            #expect(deliveries.contains { $0.status == 503 }, "the fault fired")
            let alerts = pipeline.acceptedPayloads(token: Self.token).filter { $0["aps"]?["alert"] != nil }
            let ids = alerts.compactMap { $0["event_id"]?.stringValue }
            #expect(ids.count == count, "each alert accepted exactly once")
            #expect(Set(ids).count == count)
            #expect(ids == (0..<count).map { "flaky-\($0)" }, "in order")
            #expect(pipeline.lastBadge(token: Self.token) == count)
            let badges = alerts.compactMap { $0["aps"]?["badge"]?.int64Value }
            #expect(badges == (1...count).map { Int64($0) })
        }
    }
}
