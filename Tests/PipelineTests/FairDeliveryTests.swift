import AMQPClient
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import TestServices
import Testing

/// Fair delivery end to end: one device with thousands of queued pushes and its neighbour in the same partition.
@Suite("Fair delivery end to end", .serialized, .timeLimit(.minutes(10)))
struct FairDeliveryPipelineTests {
    static let heavyToken = String(repeating: "a1b2", count: 16)
    static let nextToken = String(repeating: "c3d4", count: 16)
    static let backlog = 5_000

    /// The heavy device's 5,000 pushes and the neighbour's single push are queued behind a provider outage for
    /// both tokens (the sink answers them 503), the neighbour's last; then the outage ends and both are due at
    /// the same moment. The neighbour's push goes out in the first round, beside the heavy device's oldest pushes: at most a
    /// round's share of the heavy device (`ClaimedPushes.perDeviceLimit`) goes before it. A second push to the
    /// neighbour, published while the heavy device drains, goes out within a few rounds too. The heavy device
    /// gets all 5,000 alerts once each, in order, and drains at full speed (rounds follow each other at once).
    @Test(arguments: Backend.allCases)
    func aDeviceWithThousandsOfQueuedPushesDelaysItsNeighbourByOneRoundAtMost(backend: Backend) async throws {
        try await Pipeline.with(backend: backend, partitions: 1) { pipeline in
            let sink = pipeline.sink
            try await pipeline.publish(RobustnessTests.register("u-heavy", token: Self.heavyToken, id: "fd-r1"))
            try await pipeline.publish(RobustnessTests.register("u-next", token: Self.nextToken, id: "fd-r2"))
            try await pipeline.waitUntilQuiet()

            // Without a backlog: how long one push to the neighbour takes from its publish's confirm to the sink.
            let baseline = try await delay(of: "fd-base", second: 1, in: pipeline)

            // Queue the backlog behind an outage of both tokens.
            sink.addFault(try Fault(token: Self.heavyToken, status: 503))
            sink.addFault(try Fault(token: Self.nextToken, status: 503))
            let seeding = ContinuousClock.now
            var confirmations: [AMQPPublishConfirmation] = []
            for index in 0..<Self.backlog {
                let event = RobustnessTests.follow("u-heavy", id: "fd-h\(index)", second: index % 3600)
                confirmations.append(
                    pipeline.publisher.publishInOrder(
                        event.serialized(), exchange: pipeline.topology.exchange, routingKey: "u-heavy",
                        mandatory: true,
                        properties: AMQPProperties(
                            contentType: "application/json", deliveryMode: .persistent, messageID: "fd-h\(index)")))
            }
            for confirmation in confirmations { try await confirmation.wait() }
            try await pipeline.publish(RobustnessTests.follow("u-next", id: "fd-queued", second: 2))
            try await waitFor("the backlog to be queued", timeout: .seconds(120)) {
                let rows = try pipeline.querySQL(
                    "SELECT count(*), coalesce(sum(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0) FROM outbox "
                        + "GROUP BY token ORDER BY token")
                return rows == ["\(Self.backlog)|1", "1|1"]
            }
            let seeded = ContinuousClock.now - seeding

            // The outage ends, and both tokens' waiting pushes are due at the same moment: their retries are first
            // put off (again, should a round attempting them have scheduled them meanwhile), then made due together.
            try await waitFor("the retries to be put off", timeout: .seconds(30)) {
                try await executeBesideTheWorker(
                    "UPDATE outbox SET next_attempt_at = 9000000000000000 WHERE attempts > 0", in: pipeline)
                let attempts = sink.nextSeq
                try await Task.sleep(for: .milliseconds(300))
                return sink.nextSeq == attempts
            }
            // The last push before the recovery.
            let recovered = sink.nextSeq - 1
            _ = sink.clearFaults()
            let recovery = Date()
            try await executeBesideTheWorker("UPDATE outbox SET next_attempt_at = 0 WHERE attempts > 0", in: pipeline)
            let queued = try await accepted(eventID: "fd-queued", token: Self.nextToken, in: pipeline)
            let heavyBefore = heavyAccepted(in: pipeline, after: recovered, before: queued.seq)
            #expect(
                heavyBefore <= ClaimedPushes.perDeviceLimit,
                "\(heavyBefore) pushes of the heavy device went before its neighbour's")

            // Another push to the neighbour while the heavy device drains.
            try await waitFor("the heavy device to be draining", timeout: .seconds(120)) {
                heavyAccepted(in: pipeline, after: recovered) >= 1_000
            }
            let beforeDuring = sink.nextSeq - 1
            let during = try await delay(of: "fd-during", second: 3, in: pipeline)
            let duringPush = try await accepted(eventID: "fd-during", token: Self.nextToken, in: pipeline)
            let heavyDuring = heavyAccepted(in: pipeline, after: beforeDuring, before: duringPush.seq)

            try await waitFor("the heavy device's backlog to drain", timeout: .seconds(300)) {
                heavyAccepted(in: pipeline, after: recovered) >= Self.backlog
            }
            let heavy = sink.receivedPushes(token: Self.heavyToken).filter { $0.status == 200 && $0.seq > recovered }
            let drain = (heavy.last?.receivedAt ?? recovery).timeIntervalSince(recovery)
            let eventIDs = heavy.compactMap { try? JSONValue.parse($0.body)["event_id"]?.stringValue }
            #expect(eventIDs == (0..<Self.backlog).map { "fd-h\($0)" })
            #expect(Set(heavy.compactMap { $0.headers["apns-id"] }).count == Self.backlog)
            #expect(pipeline.lastBadge(token: Self.heavyToken) == Self.backlog)
            // The second neighbour push overtook most of what was left of the backlog.
            #expect(heavyDuring < 1_000, "\(heavyDuring) pushes of the heavy device went before the neighbour's")

            let milliseconds = { (seconds: Double) in Int((seconds * 1000).rounded()) }
            let rounds = Double(Self.backlog) / Double(ClaimedPushes.perDeviceLimit)
            print(
                "fair delivery [\(backend)]: backlog of \(Self.backlog) queued in \(seeded); neighbour's queued push "
                    + "after recovery: \(milliseconds(queued.receivedAt.timeIntervalSince(recovery))) ms, "
                    + "\(heavyBefore) heavy pushes before it; neighbour push published during the drain: "
                    + "\(milliseconds(during)) ms (\(heavyDuring) heavy pushes before it; without a backlog "
                    + "\(milliseconds(baseline)) ms); heavy device drained in \(milliseconds(drain)) ms "
                    + "(\(milliseconds(drain / rounds)) ms a round of \(ClaimedPushes.perDeviceLimit))")
        }
    }
}

/// Publishes a follow of `u-next` with id `id` and returns the seconds from its publish's confirm to the sink's
/// accepting its alert.
private func delay(of id: String, second: Int, in pipeline: Pipeline) async throws -> Double {
    try await pipeline.publish(RobustnessTests.follow("u-next", id: id, second: second))
    let published = Date()
    let push = try await accepted(eventID: id, token: FairDeliveryPipelineTests.nextToken, in: pipeline)
    return push.receivedAt.timeIntervalSince(published)
}

/// Waits for the sink to accept the alert of event `eventID` to `token`.
private func accepted(eventID: String, token: String, in pipeline: Pipeline) async throws -> ReceivedPush {
    var found: ReceivedPush?
    try await waitFor("the alert of \(eventID)", timeout: .seconds(120)) {
        found = pipeline.sink.receivedPushes(token: token).last { push in
            push.status == 200 && (try? JSONValue.parse(push.body)["event_id"]?.stringValue) == eventID
        }
        return found != nil
    }
    return try #require(found)
}

/// How many pushes the sink accepted for the heavy device with a sequence number above `after` (and below
/// `before`).
private func heavyAccepted(in pipeline: Pipeline, after: Int, before: Int = .max) -> Int {
    pipeline.sink.receivedPushes(token: FairDeliveryPipelineTests.heavyToken, after: after).filter {
        $0.status == 200 && $0.seq < before
    }.count
}

/// Runs `statement` on the pipeline's database from outside the worker, up to five times: an `UPDATE` of the
/// outbox's waiting rows locks them in its own order while the worker's claims and records lock some of them in
/// theirs, and PostgreSQL may end the test's statement as the victim of a deadlock (it is rolled back whole, so
/// running it again is safe).
private func executeBesideTheWorker(_ statement: String, in pipeline: Pipeline) async throws {
    for attempt in 1... {
        do {
            return try pipeline.executeSQL(statement)
        } catch {
            guard attempt < 5 else { throw error }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// Asks `condition` every 20 ms until it holds (`eventually`); throws after `timeout`.
private func waitFor(
    _ what: String, timeout: Duration, _ condition: () async throws -> Bool
) async throws {
    try await eventually(what, timeout: timeout, every: .milliseconds(20), condition)
}
