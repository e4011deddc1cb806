import AMQPClient
import Foundation
import TestServices
import Testing

/// `badgepipe publish` against a broker that refuses some of its events: each refused event is sent again, on a new
/// connection after a backoff, until the broker takes it.
@Suite("badgepipe publish", .serialized, .timeLimit(.minutes(2)))
struct PublishCommandTests {
    @Test func refusedEventsAreSentAgainUntilConfirmed() async throws {
        let namespace = "publish-refused-\(UInt16.random(in: 0...UInt16.max))"
        let environment = [
            "BADGEPIPE_AMQP_URL": TestServices.amqpURL, "BADGEPIPE_NAMESPACE": namespace, "BADGEPIPE_PARTITIONS": "1",
        ]
        let setup = try await runBadgepipeInBackground(["setup"], environment: environment)
        try #require(setup.status == 0, "\(setup.errors)")
        let queue = "\(namespace).events.0"
        // One message at most; the broker refuses (basic.nack) a publish that would exceed it.
        try await FleetHarness.rabbitmqctl(
            "set_policy \(namespace)-full '^\(namespace)\\.events\\.0$' "
                + "'{\"max-length\":1,\"overflow\":\"reject-publish\"}' --apply-to queues")
        defer {
            Task {
                try? await FleetHarness.rabbitmqctl("clear_policy \(namespace)-full")
                try? await FleetHarness.cleanUp(namespace: namespace)
            }
        }
        // The first event fills the queue, and nothing consumes it for 2 s after it lands (a fault held for a
        // while): the events behind it, published at five a second, are refused and sent again. Then a slow
        // consumer (one message every 300 ms) makes room one message at a time.
        let taken = Counter()
        let consumer = Task {
            let connection = try await AMQPConnection.connect(try AMQPConfiguration(url: TestServices.amqpURL))
            let channel = try await connection.openChannel()
            try await eventually("the first event in \(queue)", timeout: .seconds(60), every: .milliseconds(20)) {
                try await channel.declareQueue(queue, passive: true).messageCount >= 1
            }
            try await Task.sleep(for: .seconds(2))
            try await channel.qos(prefetchCount: 1)
            let messages = try await channel.consume(queue: queue)
            for try await message in messages {
                try? await Task.sleep(for: .milliseconds(300))
                try await channel.ack(deliveryTag: message.deliveryTag)
                taken.add()
                if Task.isCancelled { break }
            }
            await connection.close()
        }
        let published = try await runBadgepipeInBackground(
            ["publish", "--count", "5", "--rate", "5", "--users", "3"], environment: environment)
        #expect(published.status == 0, "\(published.output) \(published.errors)")
        #expect(published.output.contains("published 5 events: 5 confirmed, 0 not confirmed"), "\(published.output)")
        // The queue was full when the second event came: it, at least, was refused and sent again.
        #expect(published.output.contains("sent again after a lost connection or a refusal"), "\(published.output)")
        #expect(published.errors.contains("refused"), "\(published.errors)")
        // Every confirmed event reached the queue.
        try await eventually("the consumer took the 5 events (took \(taken.value))", timeout: .seconds(20)) {
            taken.value >= 5
        }
        consumer.cancel()
    }
}

/// A count shared between tasks.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
