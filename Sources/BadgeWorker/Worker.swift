import AMQPClient
import AsyncHTTPClient
import BadgeCore
import BadgeDelivery
import BadgeStore
import Logging
import ServiceLifecycle

/// `badgepipe worker`: declares the topology, consumes every partition queue, applies events to the store in
/// batches (one transaction and one multiple-ack per batch), and sends the resulting pushes in `badge_version`
/// order per user.
///
/// Guarantees it keeps: nothing is acked before its effect is committed; invalid messages are parked in
/// `badgepipe.dead` (confirmed) before they are acked; transient database failures are retried in place (never
/// requeued, which would reorder); pushes go through the store's outbox, so a crash between commit and send
/// re-sends them at the next start instead of losing them. On graceful shutdown the batch in progress finishes,
/// then the channels are closed without `basic.cancel`, so whatever was not processed returns to its queue in order.
public struct Worker: Service {
    private let configuration: WorkerConfiguration
    private let store: any BadgeStore
    private let logger: Logger
    /// Called once the topology is declared and every partition is being consumed.
    private let onReady: (@Sendable () async -> Void)?

    public init(
        configuration: WorkerConfiguration,
        store: any BadgeStore,
        logger: Logger,
        onReady: (@Sendable () async -> Void)? = nil
    ) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.onReady = onReady
    }

    public func run() async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let sender = PushSender(configuration: configuration.delivery, client: http, logger: logger)
        let dispatcher = PushDispatcher(
            store: store, sender: sender,
            builder: PushPayloadBuilder(
                defaultAPNsTopic: configuration.apnsTopic, fcmProject: configuration.fcmProject),
            concurrency: configuration.sendConcurrency, logger: logger)
        do {
            try await retryingTransient("migrate") { try await store.migrate() }
            // Pushes a previous run committed but did not get to send.
            try await dispatcher.drainOutbox()
            while !Task.isCancelled, !Task.isShuttingDownGracefully {
                let connection = try await AMQPConnection.connect(
                    configuration.amqp, retry: AMQPRetryPolicy(), logger: logger)
                let outcome = await runSession(connection: connection, dispatcher: dispatcher)
                await connection.close()
                if case .failure(let error) = outcome {
                    logger.warning("worker session ended, reconnecting", metadata: ["worker.error": "\(error)"])
                    try await Task.sleep(for: .milliseconds(200))
                } else {
                    break
                }
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// One connection's life: declare, consume, process until shutdown or connection loss.
    private func runSession(connection: AMQPConnection, dispatcher: PushDispatcher) async -> Result<Void, any Error> {
        do {
            let control = try await connection.openChannel()
            try await configuration.topology.declare(on: control)
            let deadLetters = try await connection.openChannel()
            try await deadLetters.confirmSelect()
            let buffers = (0..<configuration.topology.partitions).map { _ in DeliveryBuffer() }
            var consumers: [(AMQPChannel, AMQPConsumer)] = []
            for index in 0..<configuration.topology.partitions {
                let channel = try await connection.openChannel()
                try await channel.qos(prefetchCount: configuration.prefetch)
                let consumer = try await channel.consume(queue: configuration.topology.queueName(index))
                consumers.append((channel, consumer))
            }
            logger.info(
                "worker ready",
                metadata: [
                    "worker.partitions": "\(configuration.topology.partitions)",
                    "worker.policy": "\(configuration.badgePolicy.rawValue)",
                ])
            await onReady?()
            try await withGracefulShutdownHandler {
                try await withThrowingTaskGroup(of: TaskKind.self) { group in
                    for (index, (channel, consumer)) in consumers.enumerated() {
                        let buffer = buffers[index]
                        group.addTask {
                            do {
                                for try await delivery in consumer { buffer.append(delivery) }
                                buffer.finish(nil)
                            } catch {
                                buffer.finish(error)
                            }
                            return .pump
                        }
                        group.addTask {
                            let partition = PartitionProcessor(
                                channel: channel, deadLetters: deadLetters, buffer: buffer, store: store,
                                dispatcher: dispatcher, configuration: configuration,
                                logger: logger.with(metadataKey: "worker.partition", value: "\(index)"))
                            try await partition.run()
                            return .processor
                        }
                    }
                    // When every processor has finished its last batch (shutdown), close the connection: the
                    // channels close without basic.cancel, unprocessed deliveries go back in order, pumps end.
                    var processorsLeft = consumers.count
                    while let kind = try await group.next() {
                        if kind == .processor {
                            processorsLeft -= 1
                            if processorsLeft == 0 { await connection.close() }
                        }
                    }
                }
            } onGracefulShutdown: {
                for buffer in buffers { buffer.finish(nil) }
            }
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    private func retryingTransient<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws -> T {
        try await Retry.transient(what, logger: logger, body)
    }
}

/// What a task of a worker session was.
private enum TaskKind: Sendable {
    case pump
    case processor
}

extension Logger {
    /// A copy with one more metadata value.
    func with(metadataKey key: String, value: Logger.MetadataValue) -> Logger {
        var copy = self
        copy[metadataKey: key] = value
        return copy
    }
}
