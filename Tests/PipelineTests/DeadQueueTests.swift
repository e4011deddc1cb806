import AMQPClient
import BadgeCore
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import Testing

@testable import BadgeWorker

/// The dead queue end to end: what a worker parks, and `badgepipe dead`'s listing and replay (``DeadQueue``)
/// against the real broker, with a worker consuming what is replayed.
@Suite("The dead queue", .serialized, .timeLimit(.minutes(5)))
struct DeadQueueTests {
    static let token = "eeee4444eeee4444eeee4444eeee4444eeee4444eeee4444eeee4444eeee4444"

    /// A day ago, to the second. The parked and occurred times count from it: recent, so that replay takes the
    /// messages (it leaves those older than the idempotency window, ``Retention/Configuration/defaultAge``).
    static let dayAgo = Timestamp(
        microsecondsSinceEpoch: (Timestamp.now().microsecondsSinceEpoch / 1_000_000 - 86_400) * 1_000_000)

    /// ``dayAgo`` plus `hour`, `minute` and `second`, in RFC 3339.
    static func time(hour: Int64, minute: Int64 = 0, second: Int64 = 0) -> String {
        dayAgo.adding(microseconds: ((hour * 60 + minute) * 60 + second) * 1_000_000).rfc3339Milliseconds
    }

    /// Puts `body` in the dead queue as a worker parks a message (an older one, for an event it did not know).
    static func park(
        _ body: [UInt8], id: String, reason: String, at time: String, recipient: String = "u-dead",
        in pipeline: Pipeline
    ) async throws {
        let properties = ParkHeaders.stamped(
            AMQPProperties(contentType: "application/json", deliveryMode: .persistent, messageID: id),
            routingKey: recipient, reason: reason, error: "\(reason): parked for the test",
            at: try #require(Timestamp.parse(time)))
        try await pipeline.publisher.publish(
            body, exchange: "", routingKey: pipeline.topology.deadQueueName, mandatory: true, properties: properties)
    }

    static func event(_ type: String, id: String, recipient: String = "u-dead") -> [UInt8] {
        let event: JSONValue = [
            "id": .string(id), "type": .string(type), "recipient": .string(recipient),
            "occurred_at": .string(time(hour: 10)), "actor": ["id": "u-bob", "name": "Bob"],
        ]
        return event.serialized()
    }

    /// Every parked message, in queue order (left in the queue).
    static func listed(
        _ queue: DeadQueue, _ filter: ParkedFilter = ParkedFilter()
    ) async throws
        -> [ParkedMessage]
    {
        var messages: [ParkedMessage] = []
        try await queue.scan { message in
            if filter.matches(message) { messages.append(message) }
            return true
        }
        return messages
    }

    /// The alerts the sink accepted for ``token``, by event id.
    static func alerts(_ pipeline: Pipeline) -> [String] {
        pipeline.acceptedPayloads(token: token).filter { $0["aps"]?["alert"] != nil }
            .compactMap { $0["event_id"]?.stringValue }
    }

    @Test func anEventOfATypeTheWorkerDoesNotKnowIsParkedAsUnknownTypeWithTimeAndRecipient() async throws {
        try await Pipeline.with(backend: .sqlite) { pipeline in
            let before = Timestamp.now().adding(microseconds: -1000)
            try await pipeline.publish(
                Self.event("badge_party", id: "future-1", recipient: "u-future"), recipient: "u-future",
                id: "future-1")
            try await pipeline.waitUntilQuiet()
            let after = Timestamp.now()
            let queue = DeadQueue(connection: pipeline.connection, topology: pipeline.topology)
            let parked = try await Self.listed(queue)
            #expect(parked.count == 1)
            let message = try #require(parked.first)
            #expect(message.properties.headers?[ParkHeaders.reason]?.stringValue == "unknown_type")
            #expect(message.reason == "unknown_type")
            #expect(message.error == #"unknown_type: unknown type "badge_party""#)
            #expect(message.eventType == "badge_party")
            #expect(message.messageID == "future-1")
            #expect(message.originalRoutingKey == "u-future")
            let parkedAt = try #require(message.parkedAt)
            #expect(parkedAt >= before && parkedAt <= after, "\(parkedAt) within \(before)...\(after)")
            #expect(message.body == Self.event("badge_party", id: "future-1", recipient: "u-future"))
            #expect(try await queue.depth() == 1, "listing took nothing")
        }
    }

    @Test(arguments: Backend.allCases)
    func aReplayedEventTakesEffectOnceAndReplayingAgainChangesNothing(backend: Backend) async throws {
        try await Pipeline.with(backend: backend) { pipeline in
            try await pipeline.publish(RobustnessTests.register("u-dead", token: Self.token, id: "dead-d1"))
            try await pipeline.waitUntilQuiet()
            // As a worker that did not know `follow` would have left it, between two messages that are not replayed.
            try await Self.park(
                Array("junk".utf8), id: "junk-1", reason: "invalid_json", at: Self.time(hour: 10), in: pipeline)
            try await Self.park(
                Self.event("follow", id: "replay-1"), id: "replay-1", reason: "unknown_type",
                at: Self.time(hour: 10, second: 1), in: pipeline)
            try await Self.park(
                Array("junk".utf8), id: "junk-2", reason: "invalid_json", at: Self.time(hour: 10, second: 2),
                in: pipeline)
            let queue = DeadQueue(connection: pipeline.connection, topology: pipeline.topology)
            let filter = ParkedFilter(reasons: ["unknown_type"])
            #expect(try await Self.listed(queue, filter).map(\.displayID) == ["replay-1"])
            #expect(try await queue.depth() == 3)

            var outcomes: [String] = []
            let first = try await queue.replay(filter) { message, outcome in
                outcomes.append("\(message.displayID) \(outcome)")
            }
            #expect(first == DeadQueue.ReplaySummary(held: 3, read: 3, matched: 1, replayed: 1))
            #expect(outcomes == ["replay-1 replayed"])
            try await pipeline.waitUntilQuiet()
            #expect(Self.alerts(pipeline) == ["replay-1"])
            #expect(pipeline.lastBadge(token: Self.token) == 1)
            #expect(try await Self.listed(queue).map(\.displayID) == ["junk-1", "junk-2"], "the others, in order")

            let second = try await queue.replay(filter)
            #expect(second == DeadQueue.ReplaySummary(held: 2, read: 2))
            try await pipeline.waitUntilQuiet()
            #expect(Self.alerts(pipeline) == ["replay-1"])

            // A replay that died between the confirm and the ack left the message parked: replaying it publishes
            // the event again, and the worker applies it once.
            try await Self.park(
                Self.event("follow", id: "replay-1"), id: "replay-1", reason: "unknown_type",
                at: Self.time(hour: 10, second: 1), in: pipeline)
            let third = try await queue.replay(filter)
            #expect(third.replayed == 1)
            try await pipeline.waitUntilQuiet()
            #expect(Self.alerts(pipeline) == ["replay-1"])
            #expect(pipeline.lastBadge(token: Self.token) == 1)
            let snapshot = try await pipeline.store.snapshot(user: "u-dead")
            #expect(snapshot.counts.unreadNotifications == 1)
            #expect(try await queue.depth() == 2)
        }
    }

    @Test func listingAndReplayingKeepTheQueueInOrderAndTakeExactlyTheMatchingMessages() async throws {
        try await Pipeline.with(backend: .sqlite) { pipeline in
            let parked: [(id: String, body: [UInt8], reason: String, time: String)] = [
                ("p1", Self.event("like", id: "p1"), "unknown_type", Self.time(hour: 8)),
                ("p2", Self.event("follow", id: "p2"), "refused_by_database", Self.time(hour: 9)),
                ("p3", Self.event("like", id: "p3"), "unknown_type", Self.time(hour: 10)),
                ("p4", Array("{".utf8), "invalid_json", Self.time(hour: 10, minute: 30)),
                ("p5", Self.event("comment", id: "p5"), "missing_field", Self.time(hour: 11)),
                ("p6", Self.event("like", id: "p6"), "unknown_type", Self.time(hour: 12)),
            ]
            for message in parked {
                try await Self.park(
                    message.body, id: message.id, reason: message.reason, at: message.time, in: pipeline)
            }
            let queue = DeadQueue(connection: pipeline.connection, topology: pipeline.topology)
            func ids(_ filter: ParkedFilter = ParkedFilter()) async throws -> [String] {
                try await Self.listed(queue, filter).map(\.displayID)
            }
            let nine = try #require(Timestamp.parse(Self.time(hour: 9)))
            let ten = try #require(Timestamp.parse(Self.time(hour: 10)))
            #expect(try await ids() == ["p1", "p2", "p3", "p4", "p5", "p6"])
            #expect(try await ids(ParkedFilter(reasons: ["unknown_type"])) == ["p1", "p3", "p6"])
            #expect(try await ids(ParkedFilter(types: ["like"], since: nine)) == ["p3", "p6"])
            #expect(try await ids(ParkedFilter(until: ten)) == ["p1", "p2"])
            #expect(try await ids(ParkedFilter(reasons: ["invalid_json", "missing_field"])) == ["p4", "p5"])
            #expect(try await ids(ParkedFilter(ids: ["p5"])) == ["p5"])
            #expect(try await ids(ParkedFilter(types: ["amen"])) == [])
            // A caller that wants only the first messages: the pass reads on all the same, and nothing moves.
            var first: [String] = []
            try await queue.scan { message in
                first.append(message.displayID)
                return first.count < 2
            }
            #expect(first == ["p1", "p2"])
            #expect(try await queue.depth() == 6, "listing took nothing")
            #expect(try await ids() == ["p1", "p2", "p3", "p4", "p5", "p6"], "nor moved anything")

            // A scan reads what the queue held when it started; a message parked meanwhile waits behind.
            var read: [String] = []
            try await queue.scan { message in
                if message.position == 1 {
                    try await Self.park(
                        Self.event("like", id: "p7"), id: "p7", reason: "unknown_type", at: Self.time(hour: 13),
                        in: pipeline)
                }
                read.append(message.displayID)
                return true
            }
            #expect(read == ["p1", "p2", "p3", "p4", "p5", "p6"])
            #expect(try await ids() == ["p1", "p2", "p3", "p4", "p5", "p6", "p7"])

            // A dry run replays nothing.
            var wouldReplay: [String] = []
            let dry = try await queue.replay(ParkedFilter(reasons: ["unknown_type"]), dryRun: true) { message, _ in
                wouldReplay.append(message.displayID)
            }
            #expect(dry == DeadQueue.ReplaySummary(held: 7, read: 7, matched: 4, replayed: 4))
            #expect(wouldReplay == ["p1", "p3", "p6", "p7"])
            #expect(try await ids() == ["p1", "p2", "p3", "p4", "p5", "p6", "p7"])

            // Two of the `like` events replayed (--limit 2): this worker still does not know the type and parks
            // them again, behind everything; the others keep their order.
            let started = Timestamp.now().adding(microseconds: -1000)
            let replay = try await queue.replay(ParkedFilter(types: ["like"]), limit: 2)
            #expect(replay == DeadQueue.ReplaySummary(held: 7, read: 7, matched: 2, replayed: 2))
            try await pipeline.waitUntilQuiet()
            let after = try await Self.listed(queue)
            #expect(after.map(\.displayID) == ["p2", "p4", "p5", "p6", "p7", "p1", "p3"])
            for message in after.suffix(2) {
                #expect(message.reason == "unknown_type")
                #expect(message.originalRoutingKey == "u-dead")
                #expect(try #require(message.parkedAt) >= started, "parked again, with a new time")
                #expect(message.properties.contentType == "application/json")
            }

            // A pass runs alone: beside another one (another connection), or any other consumer of the dead
            // queue, it is refused rather than shown part of the queue.
            let elsewhere = try await AMQPConnection.connect(try AMQPConfiguration(url: Pipeline.amqpURL))
            let second = DeadQueue(connection: elsewhere, topology: pipeline.topology)
            try await queue.scan { _ in
                await #expect(throws: DeadQueueError.self) { try await second.scan { _ in true } }
                await #expect(throws: DeadQueueError.self) { try await second.replay(ParkedFilter()) }
                return false
            }
            #expect(try await Self.listed(second).count == 7, "and runs once the first is done")
            let other = try await pipeline.connection.openChannel()
            try await other.qos(prefetchCount: 1)
            _ = try await other.consume(queue: pipeline.topology.deadQueueName)
            await #expect(throws: DeadQueueError.self) { try await queue.scan { _ in true } }
            try await other.close()
            await elsewhere.close()
        }
    }
}

extension DeadQueueTests {
    /// A dead queue of many messages and no worker: a listing keeps all of them in order, and a replay of every
    /// other one republishes exactly those, in order, and leaves the rest in order.
    @Test func aLargeDeadQueueIsListedAndHalfReplayedInOrder() async throws {
        let count = Int(ProcessInfo.processInfo.environment["BADGEPIPE_TEST_DEAD_COUNT"] ?? "") ?? 5000
        let topology = Topology(namespace: "test-\(UInt32.random(in: 0...UInt32.max))", partitions: 2)
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: Pipeline.amqpURL))
        let channel = try await connection.openChannel()
        try await topology.declare(on: channel)
        try await channel.confirmSelect()
        let clock = ContinuousClock()
        var started = clock.now
        var confirmations: [AMQPPublishConfirmation] = []
        for index in 0..<count {
            let properties = ParkHeaders.stamped(
                AMQPProperties(contentType: "application/json", deliveryMode: .persistent, messageID: "m\(index)"),
                routingKey: "u-\(index % 7)", reason: index % 2 == 0 ? "unknown_type" : "invalid_json",
                error: "parked for the test", at: .now())
            confirmations.append(
                channel.publishInOrder(
                    Self.event("like", id: "m\(index)", recipient: "u-\(index % 7)"), exchange: "",
                    routingKey: topology.deadQueueName, mandatory: true, properties: properties))
            if confirmations.count >= 500 {
                for confirmation in confirmations { try await confirmation.wait() }
                confirmations.removeAll()
            }
        }
        for confirmation in confirmations { try await confirmation.wait() }
        let parking = clock.now - started
        let queue = DeadQueue(connection: connection, topology: topology)
        let all = (0..<count).map { "m\($0)" }

        started = clock.now
        #expect(try await Self.listed(queue).map(\.displayID) == all)
        let listing = clock.now - started
        #expect(try await queue.depth() == count)

        started = clock.now
        let summary = try await queue.replay(ParkedFilter(reasons: ["unknown_type"]))
        let replaying = clock.now - started
        #expect(
            summary == DeadQueue.ReplaySummary(held: count, read: count, matched: count / 2, replayed: count / 2))
        let remaining = try await Self.listed(queue).map(\.displayID)
        let odd = all.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        let firstDifference = zip(remaining, odd).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(remaining.count == odd.count)
        #expect(
            firstDifference == nil,
            Comment(
                rawValue: "from \(firstDifference ?? 0): \(remaining.dropFirst(firstDifference ?? 0).prefix(20)) "
                    + "instead of \(odd.dropFirst(firstDifference ?? 0).prefix(20))"))
        var republished = 0
        for index in 0..<topology.partitions {
            republished += Int(try await channel.declareQueue(topology.queueName(index), passive: true).messageCount)
        }
        #expect(republished == count / 2)
        print("dead queue of \(count): parked in \(parking), listed in \(listing), half replayed in \(replaying)")

        for index in 0..<topology.partitions { try await channel.deleteQueue(topology.queueName(index)) }
        try await channel.deleteQueue(topology.deadQueueName)
        try await channel.deleteExchange(topology.exchange)
        try await channel.deleteExchange(topology.deadLetterExchange)
        await connection.close()
    }

    @Test func replayedMessagesTheBrokerHandsBackAfterTheirAckAreSweptAway() async throws {
        let topology = Topology(namespace: "test-\(UInt32.random(in: 0...UInt32.max))", partitions: 1)
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: Pipeline.amqpURL))
        let channel = try await connection.openChannel()
        try await topology.declare(on: channel)
        try await channel.confirmSelect()
        for index in 0..<10 {
            let properties = ParkHeaders.stamped(
                AMQPProperties(messageID: "m\(index)"), routingKey: "u-1", reason: "unknown_type",
                error: "parked for the test", at: .now())
            try await channel.publish(
                Self.event("like", id: "m\(index)"), exchange: "", routingKey: topology.deadQueueName,
                mandatory: true, properties: properties)
        }
        let queue = DeadQueue(connection: connection, topology: topology)
        // As if m2, m5 and m7 had been replayed and acked, and the broker had handed them back all the same.
        var removed: [ParkedIdentity: Int] = [:]
        try await queue.scan { message in
            if ["m2", "m5", "m7"].contains(message.displayID) { removed[ParkedIdentity(message), default: 0] += 1 }
            return true
        }
        #expect(removed.count == 3)
        try await queue.sweep(removed, expected: 7)
        #expect(
            try await Self.listed(queue).map(\.displayID) == ["m0", "m1", "m3", "m4", "m6", "m8", "m9"],
            "those three are gone, the others in order")
        try await queue.sweep(removed, expected: 7)
        #expect(try await queue.depth() == 7)

        try await channel.deleteQueue(topology.queueName(0))
        try await channel.deleteQueue(topology.deadQueueName)
        try await channel.deleteExchange(topology.exchange)
        try await channel.deleteExchange(topology.deadLetterExchange)
        await connection.close()
    }

    /// Replay keeps to the idempotency window: a message whose event occurred, or that was parked, longer ago than
    /// the workers' retention is left in the queue, with its age, since the event's processed id or a read tombstone
    /// may be purged by then; a recent one goes; with no window (`--force`) the old ones go too.
    @Test func replayLeavesMessagesOlderThanTheIdempotencyWindowUnlessForced() async throws {
        let topology = Topology(namespace: "test-\(UInt32.random(in: 0...UInt32.max))", partitions: 1)
        let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: Pipeline.amqpURL))
        let channel = try await connection.openChannel()
        try await topology.declare(on: channel)
        try await channel.confirmSelect()
        let now = Timestamp.now()
        func ago(days: Int64) -> Timestamp { now.adding(microseconds: -days * 86_400_000_000) }
        let window = Retention.Configuration.defaultAge
        let windowDays = window.components.seconds / 86_400
        // (id, when the event occurred (nil: the body does not say), when it was parked)
        let parked: [(id: String, occurred: Timestamp?, parked: Timestamp)] = [
            ("occurred-long-ago", ago(days: windowDays + 10), now),
            ("recent", ago(days: 1), now),
            ("parked-long-ago", nil, ago(days: windowDays + 1)),
        ]
        for message in parked {
            var members: [(key: String, value: JSONValue)] = [
                ("id", .string(message.id)), ("type", "like"), ("recipient", "u-1"),
                ("actor", ["id": "u-bob", "name": "Bob"]),
            ]
            if let occurred = message.occurred {
                members.append(("occurred_at", .string(occurred.rfc3339Milliseconds)))
            }
            let event = JSONValue.object(members)
            let properties = ParkHeaders.stamped(
                AMQPProperties(contentType: "application/json", deliveryMode: .persistent, messageID: message.id),
                routingKey: "u-1", reason: "unknown_type", error: "parked for the test", at: message.parked)
            try await channel.publish(
                event.serialized(), exchange: "", routingKey: topology.deadQueueName, mandatory: true,
                properties: properties)
        }
        let queue = DeadQueue(connection: connection, topology: topology)
        func republished() async throws -> Int {
            Int(try await channel.declareQueue(topology.queueName(0), passive: true).messageCount)
        }

        var outcomes: [String: DeadQueue.ReplayOutcome] = [:]
        let summary = try await queue.replay(ParkedFilter()) { message, outcome in
            outcomes[message.displayID] = outcome
        }
        #expect(summary.matched == 3 && summary.replayed == 1 && summary.tooOld == 2, "\(summary)")
        #expect(outcomes["recent"] == .replayed)
        for (id, days) in [("occurred-long-ago", windowDays + 10), ("parked-long-ago", windowDays + 1)] {
            guard case .tooOld(let age)? = outcomes[id] else {
                Issue.record("\(id): \(String(describing: outcomes[id]))")
                continue
            }
            #expect(age > window && age.components.seconds / 86_400 == days, "\(id): \(age)")
        }
        #expect(try await Self.listed(queue).map(\.displayID) == ["occurred-long-ago", "parked-long-ago"])
        #expect(try await republished() == 1)

        // A window long enough takes them; no window (forced) too.
        let dry = try await queue.replay(ParkedFilter(), dryRun: true, idempotencyWindow: window * 2)
        #expect(dry.replayed == 2 && dry.tooOld == 0, "\(dry)")
        let forced = try await queue.replay(ParkedFilter(), idempotencyWindow: nil)
        #expect(forced.replayed == 2 && forced.tooOld == 0, "\(forced)")
        #expect(try await queue.depth() == 0)
        #expect(try await republished() == 3)

        try await channel.deleteQueue(topology.queueName(0))
        try await channel.deleteQueue(topology.deadQueueName)
        try await channel.deleteExchange(topology.exchange)
        try await channel.deleteExchange(topology.deadLetterExchange)
        await connection.close()
    }
}
