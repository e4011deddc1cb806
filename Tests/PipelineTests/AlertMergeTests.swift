import BadgeCore
import BadgeWire
import Foundation
import Testing

/// Guarantee 2 across partitions: one accepted alert push per device for every notification, when a round holds a
/// read's badge-only push of one partition and an alert of another partition for the same user and device.
@Suite("Alerts merged with badge-only pushes", .serialized, .timeLimit(.minutes(5)))
struct AlertMergeTests {
    static let token = "eeee5555eeee5555eeee5555eeee5555eeee5555eeee5555eeee5555eeee5555"

    static func event(
        _ type: String, user: String, id: String, second: Int, _ extra: [String: JSONValue] = [:]
    )
        -> JSONValue
    {
        var members: [(key: String, value: JSONValue)] = [
            ("id", .string(id)), ("type", .string(type)), ("recipient", .string(user)),
            (
                "occurred_at",
                .string(
                    "2026-11-21T10:\(String(format: "%02d", second / 60)):\(String(format: "%02d", second % 60))Z")
            ),
        ]
        for (key, value) in extra.sorted(by: { $0.key < $1.key }) { members.append((key, value)) }
        return .object(members)
    }

    /// Eleven notifications, a message, a read of two of them, then a follow published under another routing key
    /// (a producer that breaks the contract's routing: it lands in another partition, in the read's round), for
    /// several users at once: every follow's own alert is accepted, and each device's last push carries its user's
    /// final badge, and no device sees `badge_version` go back (a device's pushes go out in planning order whichever
    /// partitions hold them).
    @Test(arguments: Backend.allCases)
    func everyAlertIsSentWhenARoundMergesPartitions(backend: Backend) async throws {
        try await Pipeline.with(backend: backend, partitions: 8) { pipeline in
            let actor: JSONValue = ["id": "u-bob", "name": "Bob"]
            let users = (0..<8).map { "u-merge-\($0)" }
            func token(_ index: Int) -> String { String(format: "%064x", 0xeee0 + index) }
            for (index, user) in users.enumerated() {
                try await pipeline.publish(
                    Self.event(
                        "device_registered", user: user, id: "\(user)-d1", second: 0,
                        ["device": ["token": .string(token(index)), "provider": "apns", "topic": "com.example.test"]]))
            }
            try await pipeline.waitUntilQuiet()
            for (index, user) in users.enumerated() {
                for number in 1...11 {
                    try await pipeline.publish(
                        Self.event(
                            "amen", user: user, id: "\(user)-n\(number)", second: number,
                            ["actor": actor, "post_id": "p-1"]))
                }
                try await pipeline.publish(
                    Self.event(
                        "message", user: user, id: "\(user)-c1", second: 12, ["actor": actor, "conversation_id": "c-1"])
                )
                try await pipeline.publish(
                    Self.event(
                        "notification_read", user: user, id: "\(user)-r1", second: 13,
                        ["notification_ids": [.string("\(user)-n1"), .string("\(user)-n2")]]))
                let follow = Self.event("follow", user: user, id: "\(user)-f1", second: 14, ["actor": actor])
                try await pipeline.publish(follow.serialized(), recipient: "elsewhere-\(index)", id: "\(user)-f1")
                try await pipeline.waitUntilQuiet()
            }
            try await pipeline.waitUntilQuiet(outboxEmpty: true)

            for index in users.indices {
                let payloads = pipeline.acceptedPayloads(token: token(index))
                let alerts = payloads.filter { $0["aps"]?["alert"] != nil }
                let types = alerts.compactMap { $0["type"]?.stringValue }
                let pushes = payloads.map {
                    "\($0["type"]?.stringValue ?? "?")@\($0["badge_version"]?.int64Value ?? -1)"
                        + ($0["aps"]?["alert"] == nil ? "" : "!")
                }
                // 11 amens, the message and the follow.
                #expect(alerts.count == 13, "alerts \(types); pushes \(pushes)")
                #expect(types.filter { $0 == "follow" }.count == 1, "the follow's alert; pushes \(pushes)")
                #expect(payloads.last?["aps"]?["badge"]?.int64Value == 11, "pushes \(pushes)")
                let versions = payloads.compactMap { $0["badge_version"]?.int64Value }
                #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 }, "pushes \(pushes)")
            }
        }
    }
}
