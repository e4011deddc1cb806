import AMQPClient
import BadgeCore
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import TestServices
import Testing

/// Dead tokens reported back to the producers through the real broker: the sink calls an APNs token and an FCM
/// token dead, the worker deactivates both and publishes one event each to the feedback exchange (a producer's
/// queue bound to it receives them); a registration older than APNs's 410 timestamp does not reactivate the
/// token, a later one does; and with the exchange gone (the broker refusing the publish) the report waits in the
/// database and goes out once the exchange is back.
@Suite("Token feedback through the broker", .serialized, .timeLimit(.minutes(3)))
struct TokenFeedbackPipelineTests {
    private static let apnsToken = String(repeating: "0410cafe", count: 8)
    private static let fcmToken = "fcm-" + String(repeating: "0404beef", count: 8)

    /// A producer's durable queue bound to the feedback exchange with `#`.
    private static func bindFeedbackQueue(_ pipeline: Pipeline) async throws -> (AMQPChannel, String) {
        let channel = try await pipeline.connection.openChannel()
        let queue = "\(pipeline.topology.namespace).feedback-consumer"
        try await channel.declareQueue(queue, durable: true)
        try await channel.bindQueue(queue, exchange: pipeline.topology.feedbackExchange, routingKey: "#")
        return (channel, queue)
    }

    /// Waits until the one waiting report has been taken for publishing twice (its `taken_until` moved on from a
    /// first take): the first attempt is over, whatever it did with the entry.
    private static func waitUntilTakenTwice(_ pipeline: Pipeline) async throws {
        func takenUntil() throws -> Int64 {
            try pipeline.querySQL("SELECT max(taken_until) FROM token_feedback").first.flatMap { Int64($0) } ?? 0
        }
        let first = try await eventuallyValue("the report taken once", timeout: .seconds(20)) {
            let taken = try takenUntil()
            return taken > 0 ? taken : nil
        }
        try await eventually("the report taken again", timeout: .seconds(20)) { try takenUntil() > first }
    }

    /// The messages in `queue` once it holds `count` (taken off it), or what it holds after `timeout`.
    private static func take(
        _ count: Int, from queue: String, on channel: AMQPChannel, timeout: Duration = .seconds(15)
    ) async throws -> [AMQPMessage] {
        var messages: [AMQPMessage] = []
        // What it holds after `timeout` is the answer too: the caller checks the count.
        _ = try? await eventually("\(count) messages in \(queue)", timeout: timeout, every: .milliseconds(50)) {
            while messages.count < count, let message = try await channel.get(queue: queue, noAck: true) {
                messages.append(message)
            }
            return messages.count >= count
        }
        return messages
    }

    private static func register(_ token: String, provider: String, at occurredAt: String, id: String) -> JSONValue {
        var event = ProviderTests.register("u-gone", token: token, id: id, provider: provider)
        if case .object(var members) = event {
            members = members.map { $0.key == "occurred_at" ? (key: $0.key, value: .string(occurredAt)) : $0 }
            event = .object(members)
        }
        return event
    }

    @Test(arguments: Backend.allCases)
    func eachDeadTokenIsReportedOnceAndAStaleRegistrationDoesNotReactivateIt(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            let (channel, queue) = try await Self.bindFeedbackQueue(pipeline)
            defer { Task { _ = try? await channel.deleteQueue(queue) } }
            let registeredAt = "2026-11-21T09:00:00Z"
            try await pipeline.publish(Self.register(Self.apnsToken, provider: "apns", at: registeredAt, id: "g-d1"))
            try await pipeline.publish(Self.register(Self.fcmToken, provider: "fcm", at: registeredAt, id: "g-d2"))
            try await pipeline.waitUntilQuiet()
            pipeline.sink.addFault(try Fault(token: Self.apnsToken, status: 410, reason: "Unregistered"))
            pipeline.sink.addFault(try Fault(token: Self.fcmToken, status: 404, reason: "UNREGISTERED"))
            let before = Date()
            try await pipeline.publish(ProviderTests.follow("u-gone", id: "g-n1"))
            try await pipeline.waitUntilQuiet()
            #expect(try await pipeline.store.snapshot(user: "u-gone").devices.isEmpty, "both deactivated")

            let messages = try await Self.take(2, from: queue, on: channel)
            try #require(messages.count == 2, "one event per dead token")
            let events = try messages.map { try JSONValue.parse($0.body) }
            let byToken = Dictionary(uniqueKeysWithValues: zip(events.compactMap { $0["token"]?.stringValue }, events))
            let apns = try #require(byToken[Self.apnsToken])
            let fcm = try #require(byToken[Self.fcmToken])
            #expect(apns["provider"]?.stringValue == "apns" && apns["reason"]?.stringValue == "Unregistered")
            #expect(fcm["provider"]?.stringValue == "fcm" && fcm["reason"]?.stringValue == "UNREGISTERED")
            #expect(apns["app"] == nil && fcm["app"] == nil, "a deployment without apps names none")
            #expect(fcm["provider_timestamp"] == nil, "FCM gives no time of death")
            // APNs's 410 timestamp is the sink's clock when it answered: after the follow was published.
            let died = try #require(apns["provider_timestamp"]?.stringValue.flatMap(Timestamp.parse))
            #expect(died.date.timeIntervalSince(before) > -1 && died.date.timeIntervalSinceNow < 1, "\(died)")
            for event in events {
                let at = try #require(event["at"]?.stringValue.flatMap(Timestamp.parse))
                #expect(abs(at.date.timeIntervalSinceNow) < 60, "recorded by the database's clock: \(at)")
            }
            #expect(Set(messages.map(\.routingKey)) == ["apns.Unregistered", "fcm.UNREGISTERED"])
            #expect(messages.allSatisfy { $0.properties.deliveryMode == .persistent })
            #expect(messages.allSatisfy { $0.properties.contentType == "application/json" })
            #expect(Set(messages.compactMap(\.properties.messageID)).count == 2)

            // The app's backend replays the old registration: older than the 410, it changes nothing.
            let pushesBefore = pipeline.sink.receivedPushes(token: Self.apnsToken).count
            try await pipeline.publish(Self.register(Self.apnsToken, provider: "apns", at: registeredAt, id: "g-d3"))
            try await pipeline.waitUntilQuiet()
            #expect(try await pipeline.store.snapshot(user: "u-gone").devices.isEmpty, "still inactive")
            #expect(pipeline.sink.receivedPushes(token: Self.apnsToken).count == pushesBefore, "nothing sent to it")
            // A registration after the 410 (the app got the token again) reactivates it.
            let later = Timestamp(date: Date().addingTimeInterval(5)).rfc3339
            _ = pipeline.sink.clearFaults()
            try await pipeline.publish(Self.register(Self.apnsToken, provider: "apns", at: later, id: "g-d4"))
            try await pipeline.waitUntilQuiet()
            #expect(try await pipeline.store.snapshot(user: "u-gone").devices.map(\.token) == [Self.apnsToken])
            #expect(pipeline.lastBadge(token: Self.apnsToken) == 1, "its badge push went out")
            #expect(try await Self.take(1, from: queue, on: channel, timeout: .seconds(1)).isEmpty, "nothing more")
            #expect(try pipeline.querySQL("SELECT count(*) FROM token_feedback") == ["0"], "deleted once confirmed")
        }
    }

    @Test func withTheExchangeGoneTheReportWaitsInTheDatabaseAndGoesOutOnceItIsBack() async throws {
        try await Pipeline.with(backend: .sqlite) { pipeline in
            let registeredAt = "2026-11-21T09:00:00Z"
            try await pipeline.publish(Self.register(Self.apnsToken, provider: "apns", at: registeredAt, id: "w-d1"))
            try await pipeline.waitUntilQuiet()
            // The broker refuses every publish to the exchange: it is not there.
            let admin = try await pipeline.connection.openChannel()
            try await admin.deleteExchange(pipeline.topology.feedbackExchange)
            pipeline.sink.addFault(try Fault(token: Self.apnsToken, status: 410, reason: "Unregistered"))
            try await pipeline.publish(ProviderTests.follow("u-gone", id: "w-n1"))
            try await pipeline.waitUntilQuiet()
            #expect(try await pipeline.store.snapshot(user: "u-gone").devices.isEmpty, "deactivated all the same")
            try await Self.waitUntilTakenTwice(pipeline)
            #expect(
                try pipeline.querySQL("SELECT token, reason FROM token_feedback") == ["\(Self.apnsToken)|Unregistered"],
                "not lost: waiting to be published")

            // The exchange is back (badgepipe setup, say), with the producer's queue bound.
            try await admin.declareExchange(pipeline.topology.feedbackExchange, type: .topic, durable: true)
            let (channel, queue) = try await Self.bindFeedbackQueue(pipeline)
            defer { Task { _ = try? await channel.deleteQueue(queue) } }
            let messages = try await Self.take(1, from: queue, on: channel, timeout: .seconds(20))
            #expect(messages.count == 1)
            #expect(messages.first.flatMap { try? JSONValue.parse($0.body)["token"]?.stringValue } == Self.apnsToken)
            #expect(try await Self.take(1, from: queue, on: channel, timeout: .seconds(1)).isEmpty, "once")
            #expect(try pipeline.querySQL("SELECT count(*) FROM token_feedback") == ["0"])
        }
    }

    /// With the exchange there and no queue bound to it, the broker would confirm an unroutable message and drop
    /// it: the report is published mandatory, comes back, and waits in the database until a queue is bound.
    @Test func withNoQueueBoundTheReportWaitsInTheDatabaseAndGoesOutOnceOneIs() async throws {
        try await Pipeline.with(backend: .sqlite) { pipeline in
            let registeredAt = "2026-11-21T09:00:00Z"
            try await pipeline.publish(Self.register(Self.apnsToken, provider: "apns", at: registeredAt, id: "b-d1"))
            try await pipeline.waitUntilQuiet()
            pipeline.sink.addFault(try Fault(token: Self.apnsToken, status: 410, reason: "Unregistered"))
            try await pipeline.publish(ProviderTests.follow("u-gone", id: "b-n1"))
            try await pipeline.waitUntilQuiet()
            #expect(try await pipeline.store.snapshot(user: "u-gone").devices.isEmpty, "deactivated")
            // Published, returned, and taken again after the test's feedback hold (1 s).
            try await Self.waitUntilTakenTwice(pipeline)
            #expect(
                try pipeline.querySQL("SELECT token, reason FROM token_feedback") == ["\(Self.apnsToken)|Unregistered"],
                "returned unroutable, so kept")

            let (channel, queue) = try await Self.bindFeedbackQueue(pipeline)
            defer { Task { _ = try? await channel.deleteQueue(queue) } }
            let messages = try await Self.take(1, from: queue, on: channel, timeout: .seconds(20))
            #expect(messages.count == 1)
            #expect(messages.first.flatMap { try? JSONValue.parse($0.body)["token"]?.stringValue } == Self.apnsToken)
            #expect(try await Self.take(1, from: queue, on: channel, timeout: .seconds(1)).isEmpty, "once")
            #expect(try pipeline.querySQL("SELECT count(*) FROM token_feedback") == ["0"])
        }
    }
}
