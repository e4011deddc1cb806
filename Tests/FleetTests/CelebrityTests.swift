import AMQPClient
import BadgeCore
import BadgeSink
import BadgeWire
import Foundation
import TestServices
import Testing

/// One user holds far more than any other: 500,000 unread notifications, read all at once. The read-all is applied
/// in bounded chunks (`ApplyContext.readStateChunk`), so no transaction runs long, no worker exits, and the other
/// users' events published right after it go through within seconds.
@Suite("A celebrity", .serialized, .timeLimit(.minutes(10)))
struct CelebrityTests {
    static let celebrity = "u-celebrity"
    static let celebrityToken = String(repeating: "c", count: 64)
    static let others = (0..<24).map { "u-fan-\($0)" }
    static func token(of user: String) -> String {
        let digits = user.unicodeScalars.map { String($0.value, radix: 16) }.joined()
        return String((digits + String(repeating: "0", count: 64)).prefix(64))
    }

    @Test func halfAMillionNotificationsReadAtOnceHoldUpNobody() async throws {
        let base = Timestamp.now().microsecondsSinceEpoch - 3_600_000_000
        try await FleetHarness.withFleet(seed: 31) { run in
            let publisher = try await Publisher(exchange: "\(run.namespace).events")
            for user in [Self.celebrity] + Self.others {
                try await publisher.publish(
                    Event(
                        id: "reg-\(user)", type: .deviceRegistered, recipient: user,
                        occurredAt: Timestamp(microsecondsSinceEpoch: base),
                        device: DeviceInfo(
                            token: user == Self.celebrity ? Self.celebrityToken : Self.token(of: user), provider: .apns,
                            topic: "com.example.app", environment: .production)))
            }
            try await eventually("a push to every registered device", timeout: .seconds(60)) {
                run.sink.count >= 1 + Self.others.count
            }

            // The celebrity's notifications, as if received: half a million rows and the counts they make. (Received
            // through the pipeline they take minutes; what is under test is reading them.)
            let count = 500_000
            try await FleetHarness.shell(
                "psql",
                [
                    run.databaseURL, "-q", "-c",
                    "INSERT INTO notifications (user_id, id, occurred_at, read, seen) SELECT '\(Self.celebrity)', "
                        + "'seed-' || g, \(base) + g, false, false FROM generate_series(1, \(count)) g; "
                        + "UPDATE users SET unread_notifications = \(count), unseen_notifications = \(count) "
                        + "WHERE user_id = '\(Self.celebrity)'",
                ], timeout: .seconds(300))

            let clock = ContinuousClock()
            let readAllAt = clock.now
            try await publisher.publish(
                Event(id: "read-all", type: .notificationsReadAll, recipient: Self.celebrity, occurredAt: .now()))
            // The fans' events come a moment later, in later batches than the read-all's: while it is applied in
            // chunks, they go through between chunks.
            try await Task.sleep(for: .seconds(1))
            for (index, user) in Self.others.enumerated() {
                try await publisher.publish(
                    Event(
                        id: "follow-\(index)", type: .follow, recipient: user, occurredAt: .now(),
                        actor: EventActor(id: "u-star", name: "Star", username: "star")))
            }
            let published = clock.now
            // Every fan's alert, and when it came.
            var arrived: [String: Duration] = [:]
            try await eventually("every fan's alert", timeout: .seconds(120)) {
                for user in Self.others where arrived[user] == nil {
                    if run.sink.receivedPushes(token: Self.token(of: user)).contains(where: { Self.isAlert($0) }) {
                        arrived[user] = clock.now - published
                    }
                }
                return arrived.count == Self.others.count
            }
            // The read-all's push brings the celebrity's badge down to 0.
            try await eventually("the read-all's push", timeout: .seconds(300)) {
                Self.readAllBadge(run.sink.receivedPushes(token: Self.celebrityToken)) != nil
            }
            #expect(Self.readAllBadge(run.sink.receivedPushes(token: Self.celebrityToken)) == 0)
            let readAllTook = clock.now - readAllAt
            let waits = arrived.values.sorted()
            print(
                "celebrity: read-all of \(count) took \(readAllTook); fans' alerts after \(waits.first!)"
                    + " (fastest), \(waits[waits.count / 2]) (median), \(waits.last!) (slowest)")
            #expect(waits[waits.count / 2] < .seconds(5), "most fans are on other partitions and wait for nothing")
            #expect(waits.last! < .seconds(10), "the fans on the celebrity's partition go between its chunks")
            #expect(run.workers.map(\.restarts).reduce(0, +) == 0, "no worker exited")
            try await FleetHarness.shell(
                "sh",
                [
                    "-c",
                    "test \"$(psql '\(run.databaseURL)' -Atc \"select unread_notifications from users where user_id = "
                        + "'\(Self.celebrity)'\")\" = 0",
                ])
            await publisher.close()
        }
    }

    private static func isAlert(_ push: ReceivedPush) -> Bool {
        push.status == 200 && ((try? JSONValue.parse(push.body))?["aps"]?["alert"] != nil)
    }

    /// The badge of the accepted push for the read-all, once it came.
    private static func readAllBadge(_ pushes: [ReceivedPush]) -> Int64? {
        pushes.filter { $0.status == 200 }.compactMap { try? JSONValue.parse($0.body) }
            .last { $0["type"]?.stringValue == "notifications_read_all" }?["aps"]?["badge"]?.int64Value
    }

    /// Events published one at a time with confirms, routed by recipient.
    private struct Publisher {
        let connection: AMQPConnection
        let channel: AMQPChannel
        let exchange: String

        init(exchange: String) async throws {
            connection = try await AMQPConnection.connect(try AMQPConfiguration(url: FleetHarness.amqpURL))
            channel = try await connection.openChannel()
            try await channel.confirmSelect()
            self.exchange = exchange
        }

        func publish(_ event: Event) async throws {
            try await channel.publish(
                event.jsonData(), exchange: exchange, routingKey: event.recipient, mandatory: true,
                properties: AMQPProperties(
                    contentType: "application/json", deliveryMode: .persistent, messageID: event.id,
                    type: event.type.rawValue))
        }

        func close() async { await connection.close() }
    }
}
