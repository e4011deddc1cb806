import AMQPClient
import Foundation
import Logging
import Synchronization
import TestServices
import Testing

/// Against the real RabbitMQ that `scripts/services up` starts. Serialized: some tests restart the broker.
@Suite("AMQP client against RabbitMQ", .serialized, .timeLimit(.minutes(3)))
struct AMQPBrokerTests {
    /// A node that refuses connections is passed over for the next one in the list, and the rotation starts its
    /// next connection after the node it used.
    @Test func aListSkipsAnUnreachableNodeAndTheRotationMovesOn() async throws {
        var configuration = try TestBroker.configuration()
        let broker = configuration.nodes[0]
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        configuration.nodes = [AMQPConfiguration.Node(host: "127.0.0.1", port: 1), broker]
        let rotation = AMQPNodeRotation(configuration)
        let first = try await rotation.connect(logger: Logger(label: "test"))
        #expect(first.nodeIndex == 1)
        #expect(first.node == broker)
        #expect(first.serverVersion?.isEmpty == false)
        #expect(rotation.nextNode == 0)
        await first.close()
        let second = try await rotation.connect(logger: Logger(label: "test"))
        #expect(second.nodeIndex == 1, "node 0 is tried first and passed over again")
        await second.close()
        // A list of unreachable nodes fails with the last one's error, after trying each once.
        configuration.nodes = [
            AMQPConfiguration.Node(host: "127.0.0.1", port: 1), AMQPConfiguration.Node(host: "127.0.0.1", port: 2),
        ]
        await #expect(throws: AMQPError.self) { try await AMQPConnection.connect(configuration) }
    }

    @Test func tenThousandConfirmedPublishesThenConsumedWithPrefetchAndMultipleAck() async throws {
        let connection = try await TestBroker.connect()
        let channel = try await connection.openChannel()
        let queue = TestBroker.uniqueName("bulk")
        try await channel.declareQueue(queue, durable: true, arguments: ["x-queue-type": "quorum"])
        try await channel.confirmSelect()

        let count = 10_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            let window = 500
            for index in 0..<count {
                if index >= window { try await group.next() }
                group.addTask {
                    try await channel.publish(
                        Array("message \(index)".utf8), exchange: "", routingKey: queue, mandatory: true,
                        properties: AMQPProperties(deliveryMode: .persistent, messageID: "\(index)"))
                }
            }
            try await group.waitForAll()
        }
        let declared = try await channel.declareQueue(queue, passive: true)
        #expect(declared.messageCount == UInt32(count))

        let consumerChannel = try await connection.openChannel()
        try await consumerChannel.qos(prefetchCount: 200)
        let consumer = try await consumerChannel.consume(queue: queue)
        // Concurrent publishers submit in no particular order: check that each message arrives exactly once.
        var expected = 0
        var seen = Set<String>()
        for try await delivery in consumer {
            let id = try #require(delivery.properties.messageID)
            #expect(String(decoding: delivery.body, as: UTF8.self) == "message \(id)")
            #expect(!delivery.redelivered)
            #expect(seen.insert(id).inserted)
            expected += 1
            if expected % 100 == 0 || expected == count {
                try await delivery.ack(multiple: true)
            }
            if expected == count { break }
        }
        #expect(expected == count)
        try await consumerChannel.close()
        let after = try await channel.declareQueue(queue, passive: true)
        #expect(after.messageCount == 0)
        try await channel.deleteQueue(queue)
        await connection.close()
    }

    /// `basic.qos` goes out without the connection's thread waiting for its answer (while it waited, rabbitmq-c
    /// kept every frame that arrived in memory): a prefetch changed again and again while a consumer's messages
    /// stream in is answered, each `qos-ok` to its own request, and the messages keep coming in order.
    @Test func prefetchChangedWhileMessagesStreamInIsAnsweredAndTheMessagesFlowInOrder() async throws {
        let queue = TestBroker.uniqueName("qos")
        let connection = try await TestBroker.connect()
        let count = 300
        let setup = try await TestBroker.quorumQueue(queue, messages: count, on: connection)
        let channel = try await connection.openChannel()
        try await channel.qos(prefetchCount: 1)
        var received: [String] = []
        for try await message in try await channel.consume(queue: queue) {
            received.append(String(decoding: message.body, as: UTF8.self))
            // Without waiting, as a worker's partition does; every tenth time also waited for.
            channel.queueQoS(prefetchCount: UInt16(received.count % 16 + 1))
            if received.count % 10 == 0 { try await channel.qos(prefetchCount: UInt16(received.count % 32 + 1)) }
            try await message.ack()
            if received.count == count { break }
        }
        #expect(received == (0..<count).map { "m\($0)" })
        try await channel.qos(prefetchCount: 7)
        try await channel.close()
        await #expect(throws: AMQPError.self) { try await channel.qos(prefetchCount: 5) }
        try await setup.deleteQueue(queue)
        await connection.close()
    }

    @Test func unackedDeliveriesComeBackRedeliveredAfterTheConnectionCloses() async throws {
        let queue = TestBroker.uniqueName("redeliver")
        let setup = try await TestBroker.connect()
        let setupChannel = try await TestBroker.quorumQueue(queue, messages: 5, on: setup)

        let first = try await TestBroker.connect()
        let firstChannel = try await first.openChannel()
        try await firstChannel.qos(prefetchCount: 10)
        var seen: [String] = []
        for try await delivery in try await firstChannel.consume(queue: queue) {
            seen.append(String(decoding: delivery.body, as: UTF8.self))
            if seen.count == 5 { break }
        }
        #expect(seen == ["m0", "m1", "m2", "m3", "m4"])
        await first.close()

        let second = try await TestBroker.connect()
        let secondChannel = try await second.openChannel()
        var again: [String] = []
        for try await delivery in try await secondChannel.consume(queue: queue) {
            #expect(delivery.redelivered)
            #expect(delivery.properties.headers?["x-delivery-count"]?.intValue == 1)
            again.append(String(decoding: delivery.body, as: UTF8.self))
            try await delivery.ack()
            if again.count == 5 { break }
        }
        #expect(again == seen)
        try await setupChannel.deleteQueue(queue)
        await second.close()
        await setup.close()
    }

    @Test func unackedDeliveriesComeBackInOrderAheadOfNewerOnesWhenTheirChannelCloses() async throws {
        // What `badgepipe dead` relies on to read the dead queue (a quorum queue) without taking anything from it,
        // and to take out only what it replayed. (Messages taken with `basic.get`, or requeued with `basic.nack`,
        // come back in another order on RabbitMQ 3.10.)
        let queue = TestBroker.uniqueName("hand-back")
        let connection = try await TestBroker.connect()
        let count = 300
        let setup = try await TestBroker.quorumQueue(queue, messages: count, on: connection)
        let reader = try await connection.openChannel()
        try await reader.qos(prefetchCount: UInt16(count))
        var received: [AMQPMessage] = []
        for try await message in try await reader.consume(queue: queue, exclusive: true) {
            received.append(message)
            if received.count == count { break }
        }
        #expect(received.map { String(decoding: $0.body, as: UTF8.self) } == (0..<count).map { "m\($0)" })
        let taken: Set<Int> = [3, 6, 40, 99, 299]
        for index in taken.sorted() { try await reader.ack(deliveryTag: received[index].deliveryTag) }
        for index in count..<(count + 2) {
            try await setup.publish(Array("m\(index)".utf8), exchange: "", routingKey: queue)
        }
        try await reader.close()

        let after = try await connection.openChannel()
        let kept = (0..<count).filter { !taken.contains($0) }
        var bodies: [String] = []
        var counts: [Int] = []
        // The quorum queue takes the closed channel's deliveries back through its log, after `channel.close-ok`: a
        // `basic.get` right after the close may find it empty for a moment. Read until every expected message came
        // (or 10 s passed), then compare.
        try? await eventually("every expected message read back", timeout: .seconds(10), every: .milliseconds(20)) {
            while bodies.count < kept.count + 2, let message = try await after.get(queue: queue, noAck: true) {
                bodies.append(String(decoding: message.body, as: UTF8.self))
                counts.append(message.properties.headers?["x-delivery-count"]?.intValue ?? 0)
            }
            return bodies.count >= kept.count + 2
        }
        #expect(try await after.get(queue: queue, noAck: true) == nil, "nothing beyond the expected messages")
        #expect(bodies == kept.map { "m\($0)" } + ["m\(count)", "m\(count + 1)"])
        let returned = counts.prefix(kept.count)
        #expect(returned.allSatisfy { $0 == 1 }, "a quorum queue counts each return as a delivery")
        try await setup.deleteQueue(queue)
        await connection.close()
    }

    @Test func aHandlerConsumerGetsEveryDeliveryInOrderAndEndsOnceWhenTheChannelCloses() async throws {
        let queue = TestBroker.uniqueName("handler")
        let connection = try await TestBroker.connect()
        let setup = try await TestBroker.quorumQueue(queue, messages: 50, on: connection)
        let channel = try await connection.openChannel()
        try await channel.qos(prefetchCount: 20)
        let log = HandlerLog()
        try await channel.consume(queue: queue, handler: log.handler)
        var acked = 0
        while acked < 50 {
            let (bodies, last) = try await log.waitForDeliveries(after: acked)
            #expect(bodies == (acked..<(acked + bodies.count)).map { "m\($0)" })
            acked += bodies.count
            try await channel.ack(deliveryTag: last, multiple: true)
        }
        #expect(log.ends.isEmpty)
        try await channel.close()
        #expect(log.ends.count == 1)
        #expect(log.ends.first == .some(nil), "a channel the application closed ends the consumer without an error")
        #expect(log.bodies.count == 50)

        // The broker cancels a consumer whose queue is deleted: the handler ends with that error.
        let again = try await connection.openChannel()
        let cancelled = HandlerLog()
        try await again.consume(queue: queue, handler: cancelled.handler)
        try await setup.deleteQueue(queue)
        // The count is checked below: a timeout only ends the wait.
        try? await eventually("the consumer's handler ended", timeout: .seconds(5)) { !cancelled.ends.isEmpty }
        #expect(cancelled.ends.count == 1)
        #expect((cancelled.ends.first ?? nil) == .consumerCancelled)
        await connection.close()
        #expect(cancelled.ends.count == 1, "a handler ends once")
    }

    @Test func aQueuedAckGoesOutBeforeTheChannelClosesThatFollowsIt() async throws {
        let queue = TestBroker.uniqueName("queued-ack")
        let connection = try await TestBroker.connect()
        let setup = try await TestBroker.quorumQueue(queue, messages: 5, on: connection)

        let channel = try await connection.openChannel()
        try await channel.qos(prefetchCount: 10)
        var tags: [UInt64] = []
        for try await delivery in try await channel.consume(queue: queue) {
            tags.append(delivery.deliveryTag)
            if tags.count == 5 { break }
        }
        // The first three acknowledged (multiple) without waiting, then the channel closed at once: the close
        // goes out after the ack, so only the last two come back (had the ack been lost, m0 would come first).
        channel.queueAck(deliveryTag: tags[2], multiple: true)
        try await channel.close()

        let again = try await connection.openChannel()
        var redelivered: [String] = []
        for try await delivery in try await again.consume(queue: queue) {
            redelivered.append(String(decoding: delivery.body, as: UTF8.self))
            try await delivery.ack()
            if redelivered.count == 2 { break }
        }
        #expect(redelivered == ["m3", "m4"])
        try await setup.deleteQueue(queue)
        await connection.close()
    }

    @Test func aConsumerBusyForThreeHeartbeatIntervalsKeepsItsConnection() async throws {
        let connection = try await TestBroker.connect(heartbeat: 1)
        #expect(connection.heartbeatSeconds == 1)
        let channel = try await connection.openChannel()
        let queue = TestBroker.uniqueName("heartbeat")
        try await channel.declareQueue(queue, durable: false, autoDelete: false)
        try await channel.publish(Array("work".utf8), exchange: "", routingKey: queue)
        let consumer = try await channel.consume(queue: queue)
        for try await delivery in consumer {
            // "Work" for 4 s without touching the connection: more than 3 heartbeat intervals, and more than the
            // 2 intervals after which the broker drops a silent client.
            try await Task.sleep(for: .seconds(4))
            #expect(!connection.isClosed)
            try await delivery.ack()
            break
        }
        try await channel.deleteQueue(queue)
        #expect(!connection.isClosed)
        await connection.close()
    }

    @Test func anUnroutableMandatoryPublishIsReportedAsReturned() async throws {
        let connection = try await TestBroker.connect()
        let channel = try await connection.openChannel()
        let exchange = TestBroker.uniqueName("nowhere")
        try await channel.declareExchange(exchange, type: .direct, durable: false, autoDelete: true)
        try await channel.confirmSelect()
        await #expect {
            try await channel.publish(Array("x".utf8), exchange: exchange, routingKey: "no-queue", mandatory: true)
        } throws: { error in
            (error as? AMQPError)?.code == .publishReturned && (error as? AMQPError)?.replyCode == 312
        }
        // Without mandatory the broker confirms and drops it.
        try await channel.publish(Array("x".utf8), exchange: exchange, routingKey: "no-queue", mandatory: false)
        // Returned and routed publishes interleaved in one window are each told apart.
        let queue = TestBroker.uniqueName("some-routed")
        try await channel.declareQueue(queue, durable: false, exclusive: true)
        try await channel.bindQueue(queue, exchange: exchange, routingKey: "routed")
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<200 {
                group.addTask {
                    do {
                        try await channel.publish(
                            [UInt8(index % 256)], exchange: exchange, routingKey: index % 3 == 0 ? "routed" : "lost",
                            mandatory: true)
                        return (index, true)
                    } catch let error as AMQPError where error.code == .publishReturned {
                        return (index, false)
                    }
                }
            }
            var all: [Int: Bool] = [:]
            for try await (index, routed) in group { all[index] = routed }
            return all
        }
        #expect(outcomes.count == 200)
        #expect(outcomes.allSatisfy { $0.value == ($0.key % 3 == 0) })
        await connection.close()
    }

    /// `scripts/services` (like the compose file's broker) sets `max_message_size` to 1 MiB: a larger message is
    /// refused at publish, and never reaches a consumer's memory.
    @Test func aMessageAboveTheBrokersSizeLimitIsRefusedAtPublish() async throws {
        let connection = try await TestBroker.connect()
        let channel = try await connection.openChannel()
        let queue = TestBroker.uniqueName("size")
        try await channel.declareQueue(queue, durable: true, arguments: ["x-queue-type": "quorum"])
        try await channel.confirmSelect()
        try await channel.publish(
            [UInt8](repeating: 0x61, count: 100_000), exchange: "", routingKey: queue, mandatory: true,
            properties: AMQPProperties(deliveryMode: .persistent))
        await #expect {
            try await channel.publish(
                [UInt8](repeating: 0x61, count: 2 * 1_048_576), exchange: "", routingKey: queue, mandatory: true,
                properties: AMQPProperties(deliveryMode: .persistent))
        } throws: { error in
            guard let error = error as? AMQPError else { return false }
            return error.replyCode == 406 && error.message.contains("max size")
        }
        let other = try await connection.openChannel()
        #expect(try await other.declareQueue(queue, passive: true).messageCount == 1)
        try await other.deleteQueue(queue)
        await connection.close()
    }

    @Test func aConflictingDeclareClosesTheChannelWithATypedErrorAndANewChannelWorks() async throws {
        let connection = try await TestBroker.connect()
        let channel = try await connection.openChannel()
        let queue = TestBroker.uniqueName("conflict")
        try await channel.declareQueue(queue, durable: true, arguments: ["x-queue-type": "quorum"])
        await #expect {
            try await channel.declareQueue(queue, durable: true, arguments: ["x-queue-type": "classic"])
        } throws: { error in
            guard let error = error as? AMQPError else { return false }
            return error.code == .channelClosed && error.replyCode == 406
                && error.message.contains("PRECONDITION_FAILED")
        }
        // The closed channel reports the same error from now on.
        await #expect(throws: AMQPError.self) { try await channel.declareQueue(queue, passive: true) }
        let reopened = try await connection.openChannel()
        #expect(reopened.id != channel.id)
        let info = try await reopened.declareQueue(queue, passive: true)
        #expect(info.name == queue)
        try await reopened.deleteQueue(queue)
        #expect(!connection.isClosed)
        await connection.close()
    }

    @Test func connectionBlockedAndUnblockedAreReported() async throws {
        let connection = try await TestBroker.connect()
        let channel = try await connection.openChannel()
        let queue = TestBroker.uniqueName("blocked")
        try await channel.declareQueue(queue, durable: false, exclusive: true)
        try await channel.confirmSelect()
        var events = connection.events.makeAsyncIterator()
        try TestBroker.rabbitmqctl("set_vm_memory_high_watermark", "0.0000001")
        do {
            // The broker blocks a connection when it publishes during an alarm.
            async let published: Void = channel.publish(Array("during alarm".utf8), exchange: "", routingKey: queue)
            #expect(await events.next() == .blocked(reason: "low on memory"))
            try TestBroker.rabbitmqctl("set_vm_memory_high_watermark", "0.4")
            #expect(await events.next() == .unblocked)
            try await published
        } catch {
            try? TestBroker.rabbitmqctl("set_vm_memory_high_watermark", "0.4")
            throw error
        }
        await connection.close()
    }

    @Test func aBrokerRestartFailsUnconfirmedPublishesAndANewConnectionWorks() async throws {
        let queue = TestBroker.uniqueName("restart")
        do {
            try await restartUnderPublisher(queue: queue)
        } catch {
            // It holds up to millions of messages: a failed run must not leave them in the broker, where they would
            // weigh on every later run and benchmark (rabbitmqctl: no connection, and cancellation does not stop it).
            try? TestBroker.rabbitmqctl("delete_queue", queue)
            throw error
        }
    }

    private func restartUnderPublisher(queue: String) async throws {
        let connection = try await TestBroker.connect(heartbeat: 5)
        let channel = try await connection.openChannel()
        try await channel.declareQueue(queue, durable: true, arguments: ["x-queue-type": "quorum"])
        try await channel.confirmSelect()

        let tally = PublishTally()
        // Far more than the broker confirms before `stop_app` takes effect (it confirmed 200,000 before that once, and
        // the test then saw no unconfirmed publish): the loop ends once the connection has closed and ten more
        // publishes were tried. Whether a publish is still unconfirmed when the broker goes away depends on how far
        // its shutdown got (a graceful `stop_app` may confirm everything in flight first); those ten fail either way.
        let total = 5_000_000
        let publisher = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var triedAfterClose = 0
                for index in 0..<total {
                    if index >= 200 { try await group.next() }
                    if connection.isClosed {
                        triedAfterClose += 1
                        if triedAfterClose > 10 { break }
                    }
                    group.addTask {
                        do {
                            try await channel.publish(
                                Array("\(index)".utf8), exchange: "", routingKey: queue, mandatory: true,
                                properties: AMQPProperties(deliveryMode: .persistent))
                            tally.confirm(index)
                        } catch let error as AMQPError {
                            tally.fail(error.code)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        // Let some publishes through, then stop the broker under the publisher's feet.
        try await eventually("2,000 publishes confirmed", every: .milliseconds(20)) { tally.confirmedCount >= 2000 }
        // When the connection saw the broker go, by a task of its own: `stop_app` returns only once the node has
        // stopped every queue, which takes longer with more of them (22 s seen on a loaded machine).
        let closing = Task {
            let reason = await connection.closed()
            return (reason, ContinuousClock.now)
        }
        let started = ContinuousClock.now
        try TestBroker.rabbitmqctl("stop_app")
        let (reason, closedAt) = await closing.value
        let detection = closedAt - started
        try TestBroker.rabbitmqctl("start_app")
        try await publisher.value

        #expect(reason?.code == .connectionClosed || reason?.code == .connectionLost)
        #expect(detection < .seconds(15))
        let failures = tally.failures
        let successes = tally.confirmed
        #expect(!failures.isEmpty)
        #expect(failures.allSatisfy { $0 == .publishUnconfirmed || $0 == .connectionClosed || $0 == .connectionLost })

        // A new connection, with backoff while the broker finishes starting, and every confirmed message is there.
        let again = try await AMQPConnection.connect(
            TestBroker.configuration(), retry: AMQPRetryPolicy(maxAttempts: 100))
        let consumerChannel = try await again.openChannel()
        try await consumerChannel.qos(prefetchCount: 500)
        var info = try await consumerChannel.declareQueue(queue, passive: true)
        // The quorum queue may still be electing its leader right after start_app.
        try? await eventually("the queue holds every confirmed message", timeout: .seconds(10)) {
            info = try await consumerChannel.declareQueue(queue, passive: true)
            return info.messageCount >= successes.count
        }
        #expect(Int(info.messageCount) >= successes.count)
        var received = Set<Int>()
        var seen = 0
        for try await delivery in try await consumerChannel.consume(queue: queue) {
            if let index = Int(String(decoding: delivery.body, as: UTF8.self)) { received.insert(index) }
            seen += 1
            if seen % 250 == 0 || seen == Int(info.messageCount) { try await delivery.ack(multiple: true) }
            if seen == Int(info.messageCount) { break }
        }
        #expect(successes.isSubset(of: received), "every confirmed message survives the restart")
        try await consumerChannel.deleteQueue(queue)
        await again.close()
    }
}

/// What happened to each publish of a test, recorded from many tasks.
final class PublishTally: Sendable {
    private let state = Mutex<(confirmed: Set<Int>, failures: [AMQPError.Code])>(([], []))

    func confirm(_ index: Int) { state.withLock { _ = $0.confirmed.insert(index) } }
    func fail(_ code: AMQPError.Code) { state.withLock { $0.failures.append(code) } }
    var confirmedCount: Int { state.withLock { $0.confirmed.count } }
    var confirmed: Set<Int> { state.withLock { $0.confirmed } }
    var failures: [AMQPError.Code] { state.withLock { $0.failures } }
}

/// What an ``AMQPMessageHandler`` was given, from the connection's thread.
final class HandlerLog: Sendable {
    private struct State {
        var bodies: [String] = []
        var tags: [UInt64] = []
        var ends: [AMQPError.Code?] = []
    }

    private let state = Mutex(State())

    var handler: AMQPMessageHandler {
        AMQPMessageHandler(
            message: { message in
                self.state.withLock {
                    $0.bodies.append(String(decoding: message.body, as: UTF8.self))
                    $0.tags.append(message.deliveryTag)
                }
            },
            end: { error in
                self.state.withLock { $0.ends.append(error.map { ($0 as? AMQPError)?.code ?? .library }) }
            })
    }

    var bodies: [String] { state.withLock { $0.bodies } }
    /// Each end: nil for a clean one, the error's code otherwise.
    var ends: [AMQPError.Code?] { state.withLock { $0.ends } }

    /// The bodies delivered after the first `count`, once there are some (polled), and the last one's tag.
    func waitForDeliveries(after count: Int) async throws -> ([String], UInt64) {
        for _ in 0..<100 {
            let found = state.withLock { state -> ([String], UInt64)? in
                guard state.bodies.count > count, let last = state.tags.last else { return nil }
                return (Array(state.bodies[count...]), last)
            }
            if let found { return found }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw AMQPError(.library, "no delivery after \(count) within 5 s")
    }
}
