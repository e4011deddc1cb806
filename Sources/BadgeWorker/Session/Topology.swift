import AMQPClient
import Logging

/// The broker objects the pipeline owns, and how they are declared.
///
/// `badgepipe.events` is a modulus-hash exchange (`x-modulus-hash`, from the `rabbitmq_sharding` plugin): the
/// routing key (the event's recipient) is hashed, modulo the number of partition queues `badgepipe.events.<n>`,
/// taken in name order, so one user's events always land in one queue, in publish order. Not the consistent-hash
/// exchange: its hash ring is rebuilt from the bindings in arbitrary order when the broker restarts, which moves
/// users to other partitions while their earlier events still wait in the old ones. Changing the number of
/// partitions moves most users, so it is fixed per deployment.
///
/// Each partition queue has single active consumer (one worker at a time consumes it, another takes over when that
/// one dies), a delivery limit (a message that keeps killing workers is dead-lettered instead of looping) and
/// dead-letters into `badgepipe.dlx`, a fanout exchange bound to the durable queue `badgepipe.dead`. Invalid events
/// are parked in `badgepipe.dead` directly by the worker, with the header `x-badgepipe-error`. Dead tokens are
/// reported to `badgepipe.feedback`, a durable topic exchange (see `FeedbackPublisher`).
public struct Topology: Sendable, Hashable {
    /// The contract's exchange name.
    public static let eventsExchange = "badgepipe.events"
    /// The contract's dead queue, where parked messages go.
    public static let deadQueue = "badgepipe.dead"
    /// The header that carries why a message was parked.
    public static let errorHeader = "x-badgepipe-error"

    /// Prefix of every name: `badgepipe` in production (the contract's names); tests use their own so that they
    /// never share queues with a running deployment.
    public var namespace: String
    /// The events exchange producers publish to.
    public var exchange: String { "\(namespace).events" }
    /// The fanout exchange partition queues dead-letter into.
    public var deadLetterExchange: String { "\(namespace).dlx" }
    /// The durable queue of parked messages.
    public var deadQueueName: String { "\(namespace).dead" }
    /// The durable topic exchange dead tokens are reported to (contract v1.1, token feedback), with the routing key
    /// `<provider>.<reason>`: producers bind a queue of their own to it.
    public var feedbackExchange: String { "\(namespace).feedback" }

    /// Number of partition queues. Every process of one deployment must use the same number.
    public var partitions: Int
    /// Deliveries of one message before the broker dead-letters it (quorum queue `x-delivery-limit`).
    public var deliveryLimit: Int

    /// The partition queues of a deployment unless it says otherwise (`--partitions`, `BADGEPIPE_PARTITIONS`).
    public static let defaultPartitions = 8
    /// The prefix of every broker name unless the deployment says otherwise (`--namespace`, `BADGEPIPE_NAMESPACE`).
    public static let defaultNamespace = "badgepipe"

    public init(
        namespace: String = Topology.defaultNamespace, partitions: Int = Topology.defaultPartitions,
        deliveryLimit: Int = 20
    ) {
        self.namespace = namespace
        self.partitions = partitions
        self.deliveryLimit = deliveryLimit
    }

    /// The name of partition `index`.
    public func queueName(_ index: Int) -> String { "\(exchange).\(index)" }

    /// Throws ``TopologyError`` when the partition queue after the last one this process expects exists.
    ///
    /// The exchange hashes each recipient over every bound partition queue: with a queue `<partitions>` left from a
    /// deployment set up with more partitions (or created by a process told a larger number), users hash to other
    /// queues than the workers think, and the events routed to the extra queue wait there, consumed by nobody. A
    /// passive declare on a channel of its own tells (the broker closes that channel when the queue is missing).
    public func checkNoExtraPartition(on connection: AMQPConnection) async throws {
        let extra = queueName(partitions)
        guard let messages = try await messageCount(extra, on: connection) else { return }
        throw TopologyError(
            code: .morePartitionsDeclared,
            message:
                "the queue \(extra) exists (\(messages) messages): the deployment has more than \(partitions) "
                + "partitions, and events hashed to the extra queues would wait there unconsumed; run every "
                + "process with the deployment's --partitions, or move those messages and delete the extra queues")
    }

    /// Throws ``TopologyError`` when the deployment exists (its first partition queue does) but has fewer
    /// partition queues than this process expects (its last one does not).
    ///
    /// Declaring the missing queues would bind them to the exchange and hash most users to other queues than
    /// before, while their earlier events still wait in the old ones: their order would be lost. ``declare(on:)``
    /// creates the partition queues last to first, so a `badgepipe setup` that stopped half-way never leaves the
    /// first one behind without the last, and is simply run again.
    public func checkNoMissingPartition(on connection: AMQPConnection) async throws {
        guard partitions > 1 else { return }
        guard try await messageCount(queueName(0), on: connection) != nil else { return }
        let last = queueName(partitions - 1)
        guard try await messageCount(last, on: connection) == nil else { return }
        throw TopologyError(
            code: .fewerPartitionsDeclared,
            message:
                "the queue \(queueName(0)) exists but \(last) does not: the deployment has fewer than \(partitions) "
                + "partitions, and adding queues would move most users to other partitions while their earlier events "
                + "still wait in the old ones; run every process with the deployment's --partitions, or drain the "
                + "partition queues, delete them and run badgepipe setup with the new number")
    }

    /// The messages in `queue`, or nil when it does not exist: a passive declare on a channel of its own (the
    /// broker closes that channel when the queue is missing).
    private func messageCount(_ queue: String, on connection: AMQPConnection) async throws -> UInt32? {
        let channel = try await connection.openChannel()
        do {
            let info = try await channel.declareQueue(queue, passive: true)
            try? await channel.close()
            return info.messageCount
        } catch let error as AMQPError where error.replyCode == 404 {
            return nil
        }
    }

    /// Everything a worker or `badgepipe setup` does before using the broker: checks the broker's version
    /// (``BrokerVersion``: refused below 3.8, and on 4.0–4.2 unless `allowUnstableRouting`; a warning on 3.8–3.9),
    /// checks that the partition queues agree with ``partitions``, then declares the topology.
    ///
    /// On a cluster every queue is a quorum queue with a member on each node (RabbitMQ's default initial group
    /// size is every node of the cluster when the queue is declared): `badgepipe setup` reports the members.
    public func prepare(on connection: AMQPConnection, allowUnstableRouting: Bool = false, logger: Logger) async throws
    {
        let version = connection.serverVersion.flatMap(BrokerVersion.init)
        if let version {
            switch version.support {
            case .supported:
                break
            case .untested(let why):
                logger.warning("untested broker version", metadata: ["amqp.version": "\(version)", "reason": "\(why)"])
            case .unstableRouting(let why):
                guard allowUnstableRouting else { throw TopologyError(code: .unsupportedBroker, message: why) }
                logger.warning(
                    "running on a broker whose partition routing may not be stable, as allowed",
                    metadata: ["amqp.version": "\(version)", "reason": "\(why)"])
            case .unsupported(let why):
                throw TopologyError(code: .unsupportedBroker, message: why)
            }
        } else {
            logger.warning(
                "the broker did not say its version; assuming it can carry the topology",
                metadata: ["amqp.version": "\(connection.serverVersion ?? "none")"])
        }
        // Checked before anything is declared: declaring would add the missing queues.
        try await checkNoExtraPartition(on: connection)
        try await checkNoMissingPartition(on: connection)
        let channel = try await connection.openChannel()
        try await declare(on: channel, brokerVersion: version, connection: connection, logger: logger)
        try? await channel.close()
    }

    /// Declares everything (idempotent; every worker does it at start, `badgepipe setup` does it alone). Partition
    /// queues are declared last to first (see ``checkNoMissingPartition(on:)``).
    ///
    /// On a broker that gives quorum queues a default delivery limit (4.0 and later), `badgepipe.dead` is declared
    /// with `x-delivery-limit: -1` (no limit): what is read from it and returned is never dropped. A dead queue
    /// that already exists without that argument cannot be changed by a declare; it is kept, with a warning
    /// naming the policy that lifts the limit.
    public func declare(
        on channel: AMQPChannel,
        brokerVersion: BrokerVersion? = nil,
        connection: AMQPConnection? = nil,
        logger: Logger? = nil
    ) async throws {
        try await channel.declareExchange(deadLetterExchange, type: .fanout, durable: true)
        var deadArguments: AMQPTable = ["x-queue-type": "quorum"]
        if brokerVersion?.defaultsDeliveryLimit == true, let connection {
            // Declaring an existing queue with other arguments closes the channel (406): try on a channel of its
            // own first.
            let probe = try await connection.openChannel()
            do {
                try await probe.declareQueue(
                    deadQueueName, durable: true, arguments: ["x-queue-type": "quorum", "x-delivery-limit": .int64(-1)])
                try? await probe.close()
                deadArguments["x-delivery-limit"] = .int64(-1)
            } catch let error as AMQPError where error.replyCode == 406 {
                logger?.warning(
                    """
                    the dead queue exists without an explicit delivery limit: the broker's default applies; lift it \
                    with a policy (delivery-limit -1) on \(deadQueueName)
                    """,
                    metadata: ["amqp.queue": "\(deadQueueName)"])
            }
        }
        try await channel.declareQueue(deadQueueName, durable: true, arguments: deadArguments)
        try await channel.bindQueue(deadQueueName, exchange: deadLetterExchange, routingKey: "")
        try await channel.declareExchange(exchange, type: .modulusHash, durable: true)
        try await channel.declareExchange(feedbackExchange, type: .topic, durable: true)
        for index in (0..<partitions).reversed() {
            let queue = queueName(index)
            try await channel.declareQueue(
                queue, durable: true,
                arguments: [
                    "x-queue-type": "quorum",
                    "x-single-active-consumer": true,
                    "x-delivery-limit": .int64(Int64(deliveryLimit)),
                    "x-dead-letter-exchange": .string(deadLetterExchange),
                ])
            try await channel.bindQueue(queue, exchange: exchange, routingKey: "")
        }
    }
}
