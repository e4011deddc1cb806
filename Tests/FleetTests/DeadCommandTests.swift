import AMQPClient
import BadgeWire
import Foundation
import Testing

/// `badgepipe dead list | show | replay`, the built command against the real broker: its output, and that it
/// takes from the dead queue only what it replayed.
@Suite("badgepipe dead", .serialized, .timeLimit(.minutes(3)))
struct DeadCommandTests {
    @Test func listShowAndReplayThroughTheCommand() async throws {
        let namespace = "dead-\(UInt32.random(in: 0...UInt32.max))"
        let broker = ["--amqp-url", FleetHarness.amqpURL, "--namespace", namespace]
        let setup = try runBadgepipe(["setup", "--partitions", "2"] + broker)
        #expect(setup.status == 0, "\(setup.errors)")
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: FleetHarness.amqpURL))
        let channel = try await connection.openChannel()
        try await channel.confirmSelect()
        let dead = "\(namespace).dead"
        // Two messages as a worker parks them, an hour ago: a valid event it did not know, and one that is not
        // JSON.
        func ago(_ seconds: Double) -> String {
            Timestamp(date: Date().addingTimeInterval(-seconds)).rfc3339Milliseconds
        }
        let (hourAgo, parkedAt) = (ago(3600), ago(3599))
        let event =
            #"{"id":"cli-1","type":"follow","recipient":"u-cli","occurred_at":"\#(hourAgo)","#
            + #""actor":{"id":"u-2","name":"Two"}}"#
        let parked: [(body: String, id: String, reason: String, error: String, at: String)] = [
            ("not json", "cli-0", "invalid_json", "invalid_json: expected a value at byte 0", hourAgo),
            (event, "cli-1", "unknown_type", #"unknown_type: unknown type "follow""#, parkedAt),
        ]
        for message in parked {
            let headers: AMQPTable = [
                "x-badgepipe-reason": .string(message.reason), "x-badgepipe-error": .string(message.error),
                "x-badgepipe-parked-at": .string(message.at), "x-badgepipe-original-routing-key": "u-cli",
            ]
            try await channel.publish(
                Array(message.body.utf8), exchange: "", routingKey: dead, mandatory: true,
                properties: AMQPProperties(
                    contentType: "application/json", headers: headers, deliveryMode: .persistent,
                    messageID: message.id))
        }

        let table = try runBadgepipe(["dead", "list"] + broker)
        #expect(table.status == 0, "\(table.errors)")
        let lines = table.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("POS") == true)
        #expect(lines.dropFirst().first?.contains("invalid_json") == true)
        #expect(lines.last?.contains("follow") == true && lines.last?.contains("unknown_type") == true)
        #expect(table.errors.contains("2 of the 2 parked messages read match"), "\(table.errors)")

        let json = try runBadgepipe(["dead", "list", "--json", "--reason", "unknown_type"] + broker)
        #expect(json.status == 0, "\(json.errors)")
        let rows = try json.output.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        #expect(rows.count == 1)
        #expect(rows.first?["position"]?.int64Value == 2)
        #expect(rows.first?["message_id"]?.stringValue == "cli-1")
        #expect(rows.first?["type"]?.stringValue == "follow")
        #expect(rows.first?["reason"]?.stringValue == "unknown_type")
        #expect(rows.first?["parked_at"]?.stringValue == parkedAt)
        #expect(rows.first?["routing_key"]?.stringValue == "u-cli")

        let shown = try runBadgepipe(["dead", "show", "cli-1"] + broker)
        #expect(shown.status == 0, "\(shown.errors)")
        #expect(shown.output.contains("reason        unknown_type"))
        #expect(shown.output.contains(#"  "type": "follow","#), "the body, indented:\n\(shown.output)")
        let byPosition = try runBadgepipe(["dead", "show", "1", "--json"] + broker)
        #expect(try JSONValue.parse(byPosition.output.trimmingCharacters(in: .newlines))["body_text"] == "not json")
        let missing = try runBadgepipe(["dead", "show", "cli-9"] + broker)
        #expect(missing.status != 0)
        #expect(missing.errors.contains("no parked message has the id or position cli-9"))

        let dry = try runBadgepipe(["dead", "replay", "--reason", "unknown_type", "--dry-run"] + broker)
        #expect(dry.status == 0, "\(dry.errors)")
        #expect(dry.output.contains("would replay 2 cli-1"))
        #expect(try await channel.declareQueue(dead, passive: true).messageCount == 2)

        let replay = try runBadgepipe(["dead", "replay", "--reason", "unknown_type"] + broker)
        #expect(replay.status == 0, "\(replay.errors)")
        #expect(replay.output.contains("replayed 2 cli-1 type=follow reason=unknown_type"))
        #expect(try await channel.declareQueue(dead, passive: true).messageCount == 1)
        // The partition queues have single active consumer, which refuses `basic.get`: count, then consume.
        var republished: [AMQPMessage] = []
        for index in 0..<2 {
            let partition = "\(namespace).events.\(index)"
            let count = try await channel.declareQueue(partition, passive: true).messageCount
            guard count > 0 else { continue }
            let consumer = try await connection.openChannel()
            for try await message in try await consumer.consume(queue: partition) {
                republished.append(message)
                if republished.count == count { break }
            }
            try await consumer.close()
        }
        #expect(republished.count == 1)
        #expect(republished.first.map { String(decoding: $0.body, as: UTF8.self) } == event)
        #expect(republished.first?.routingKey == "u-cli")
        #expect(republished.first?.properties.messageID == "cli-1")
        #expect(republished.first?.properties.headers?.keys.contains { $0.hasPrefix("x-badgepipe-") } != true)
        let again = try runBadgepipe(["dead", "replay", "--reason", "unknown_type"] + broker)
        #expect(again.status == 0)
        #expect(again.errors.contains("replayed 0 of 0 matching"), "\(again.errors)")

        // Older than the idempotency window (the workers' 30-day retention): left, saying why, unless --force.
        let old =
            #"{"id":"cli-old","type":"follow","recipient":"u-cli","occurred_at":"\#(ago(40 * 86_400))","#
            + #""actor":{"id":"u-2","name":"Two"}}"#
        try await channel.publish(
            Array(old.utf8), exchange: "", routingKey: dead, mandatory: true,
            properties: AMQPProperties(
                contentType: "application/json",
                headers: [
                    "x-badgepipe-reason": "unknown_type", "x-badgepipe-error": "unknown_type: x",
                    "x-badgepipe-parked-at": .string(ago(60)), "x-badgepipe-original-routing-key": "u-cli",
                ], deliveryMode: .persistent, messageID: "cli-old"))
        let refused = try runBadgepipe(["dead", "replay", "--id", "cli-old"] + broker)
        #expect(refused.status == 0, "\(refused.errors)")
        #expect(
            refused.output.contains("left (40 days old, older than the 30-day idempotency window"), "\(refused.output)")
        #expect(refused.errors.contains("1 older than 30 days (--force replays them)"), "\(refused.errors)")
        #expect(try await channel.declareQueue(dead, passive: true).messageCount == 2, "still parked")
        let longer = try runBadgepipe(
            ["dead", "replay", "--id", "cli-old", "--retention-days", "60", "--dry-run"] + broker)
        #expect(longer.output.contains("would replay"), "within a 60-day window: \(longer.output)")
        let forced = try runBadgepipe(["dead", "replay", "--id", "cli-old", "--force"] + broker)
        #expect(forced.status == 0, "\(forced.errors)")
        #expect(forced.output.contains("replayed 2 cli-old"), "\(forced.output)")
        #expect(try await channel.declareQueue(dead, passive: true).messageCount == 1)

        let wrong = try runBadgepipe([
            "dead", "list", "--amqp-url", FleetHarness.amqpURL, "--namespace", namespace + "x",
        ])
        #expect(wrong.status != 0)
        #expect(wrong.errors.contains("there is no queue \(namespace)x.dead"), "\(wrong.errors)")
        let badTime = try runBadgepipe(["dead", "list", "--since", "yesterday"] + broker)
        #expect(badTime.status != 0)
        #expect(badTime.errors.contains("--since must be an RFC 3339 time or an age"), "\(badTime.errors)")

        for index in 0..<2 { try await channel.deleteQueue("\(namespace).events.\(index)") }
        try await channel.deleteQueue(dead)
        try await channel.deleteExchange("\(namespace).events")
        try await channel.deleteExchange("\(namespace).dlx")
        await connection.close()
    }
}
