import AMQPClient
import BadgeCore
import BadgeSink
import BadgeWire
import Foundation
import TestServices
import Testing

/// Messages far over the contract's 64 KiB (the broker takes up to 1 MiB): each is parked with its reason and its
/// original body, while the other events flow; the worker's memory stays bounded (its consumers hold such bodies in
/// files until they are parked, and each partition's prefetch follows its messages' size).
@Suite("Oversized messages", .serialized, .timeLimit(.minutes(6)))
struct OversizedMessagesTests {
    @Test func sixHundredMessagesOfOneMegabyteAreParkedWhileEventsFlow() async throws {
        try await FleetHarness.withFleet(seed: 41, workers: 1) { run in
            let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: FleetHarness.amqpURL))
            let channel = try await connection.openChannel()
            try await channel.confirmSelect()
            let exchange = "\(run.namespace).events"
            func publish(_ body: [UInt8], routingKey: String, id: String) -> AMQPPublishConfirmation {
                channel.publishInOrder(
                    body, exchange: exchange, routingKey: routingKey, mandatory: true,
                    properties: AMQPProperties(
                        contentType: "application/json", deliveryMode: .persistent, messageID: id))
            }
            let users = (0..<20).map { "u-\($0)" }
            var confirmations: [AMQPPublishConfirmation] = []
            for (index, user) in users.enumerated() {
                let event = Event(
                    id: "reg-\(index)", type: .deviceRegistered, recipient: user, occurredAt: .now(),
                    device: DeviceInfo(
                        token: String(format: "%064x", index + 1), provider: .apns, topic: "com.example.app",
                        environment: .production))
                confirmations.append(publish(event.jsonData(), routingKey: user, id: event.id))
            }
            // A megabyte of JSON-looking text, then a valid event, over and over.
            let big = Array(
                ("{\"type\":\"comment\",\"text\":\"" + String(repeating: "x", count: 1_000_000) + "\"}").utf8)
            for index in 0..<600 {
                let user = users[index % users.count]
                confirmations.append(publish(big, routingKey: user, id: "big-\(index)"))
                if index % 20 == 0 {
                    let event = Event(
                        id: "follow-\(index)", type: .follow, recipient: user, occurredAt: .now(),
                        actor: EventActor(id: "u-x", name: "X", username: "x"))
                    confirmations.append(publish(event.jsonData(), routingKey: user, id: event.id))
                }
                while confirmations.count > 64 { try await confirmations.removeFirst().wait() }
            }
            for confirmation in confirmations { try await confirmation.wait() }

            // Every follow's alert arrives; every big message is parked. An alert is its event on its device: a
            // repeat (a re-send after a failure) must carry the alert's apns-id.
            let tokens = Set((0..<users.count).map { String(format: "%064x", $0 + 1) })
            func alerts() -> [String: Set<String>] {
                var found: [String: Set<String>] = [:]
                for push in run.sink.receivedPushes() where push.status == 200 && tokens.contains(push.token) {
                    guard let payload = try? JSONValue.parse(push.body), payload["aps"]?["alert"] != nil,
                        let event = payload["event_id"]?.stringValue, event.hasPrefix("follow-")
                    else { continue }
                    found["\(event)|\(push.token)", default: []].insert(
                        push.headers["apns-id"] ?? "")
                }
                return found
            }
            var parked = 0
            try await eventually("600 messages parked and 30 alerts delivered", timeout: .seconds(120)) {
                parked = try await FleetHarness.deadLettered(namespace: run.namespace)
                return parked == 600 && alerts().count == 30
            }
            #expect(parked == 600)
            let delivered = alerts()
            #expect(delivered.count == 30, "\(delivered.keys.sorted())")
            #expect(delivered.values.allSatisfy { $0.count == 1 }, "a repeated alert with another apns-id")
            // Parked with the reason and the original body and properties (guarantee 7).
            let dead = try await channel.get(queue: "\(run.namespace).dead")
            #expect(dead?.body == big, "the parked body is the original, \(dead?.body.count ?? -1) bytes")
            #expect(dead?.properties.contentType == "application/json")
            #expect(dead?.properties.messageID?.hasPrefix("big-") == true)
            let reason = dead?.properties.headers?["x-badgepipe-error"].map { "\($0)" } ?? ""
            #expect(reason.contains("too_large"), "\(reason)")
            let peak = try #require(run.workers[0].peakResidentMegabytes)
            print("oversized: 600 messages of 1 MB parked, 30 alerts delivered; worker peak RSS \(peak) MB")
            #expect(peak <= 150)
            await connection.close()
        }
    }
}
