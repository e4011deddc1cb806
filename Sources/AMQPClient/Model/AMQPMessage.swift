/// A message the broker delivered to a consumer (or that `basic.get` fetched). AMQP calls this a delivery; the
/// project calls it a message everywhere (a "delivery" would read as a push), keeping the word only in the
/// protocol's own field names (`deliveryTag`).
public struct AMQPMessage: Sendable {
    /// The message body; empty when it was longer than its consumer keeps in memory (see
    /// ``AMQPMessageHandler/maxBodyBytes``, ``bodySize``, ``spilledBody``).
    public var body: [UInt8]
    /// The body's length as the broker sent it: more than `body.count` when the body is not in memory.
    public var bodySize: Int = 0
    /// The body, in a file, when it was longer than its consumer keeps in memory.
    public var spilledBody: AMQPSpilledBody?
    /// The content header.
    public var properties: AMQPProperties
    /// The channel-scoped tag to ack, nack or reject it with.
    public var deliveryTag: UInt64
    /// True when the broker delivered this message before (to this or another consumer) without an ack.
    public var redelivered: Bool
    /// The exchange it was published to.
    public var exchange: String
    /// The routing key it was published with.
    public var routingKey: String
    /// The consumer it was delivered to (empty for `basic.get`).
    public var consumerTag: String
    /// The channel it arrived on; acks go back through it.
    public var channel: AMQPChannel

    /// Whether the body is not in memory for its length (``AMQPMessageHandler/maxBodyBytes``): it is in
    /// ``spilledBody``.
    public var bodySpilled: Bool { bodySize > body.count }

    /// The whole body: ``body``, or ``spilledBody`` read back into memory.
    public func wholeBody() throws -> [UInt8] {
        guard bodySpilled, let spilledBody else { return body }
        return try spilledBody.read()
    }

    /// Acknowledges this message (and, with `multiple`, every earlier unacked one on the channel).
    public func ack(multiple: Bool = false) async throws {
        try await channel.ack(deliveryTag: deliveryTag, multiple: multiple)
    }

    /// Rejects this message without requeueing it (it is dead-lettered if the queue has a dead-letter exchange).
    public func reject() async throws {
        try await channel.reject(deliveryTag: deliveryTag, requeue: false)
    }
}

/// What `queue.declare` answered.
public struct AMQPQueueInfo: Sendable, Hashable {
    /// The queue name (the broker's choice when declared with an empty name).
    public var name: String
    /// Ready messages in the queue.
    public var messageCount: UInt32
    /// Active consumers on the queue.
    public var consumerCount: UInt32
}

/// Exchange types known to RabbitMQ; any other name (a plugin's) may be given with `custom`.
public struct AMQPExchangeType: Sendable, Hashable, RawRepresentable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let direct = AMQPExchangeType(rawValue: "direct")
    public static let fanout = AMQPExchangeType(rawValue: "fanout")
    public static let topic = AMQPExchangeType(rawValue: "topic")
    public static let headers = AMQPExchangeType(rawValue: "headers")
    /// The `rabbitmq_consistent_hash_exchange` plugin's type.
    public static let consistentHash = AMQPExchangeType(rawValue: "x-consistent-hash")
    /// The `rabbitmq_sharding` plugin's type: hash of the routing key modulo the number of bound queues, over the
    /// queues in name order (the same queue for a key across broker restarts, whatever order bindings came in).
    public static let modulusHash = AMQPExchangeType(rawValue: "x-modulus-hash")
    /// Any other exchange type.
    public static func custom(_ name: String) -> AMQPExchangeType { AMQPExchangeType(rawValue: name) }
}

/// Something that happened to a connection, reported on `AMQPConnection.events`.
public enum AMQPConnectionEvent: Sendable, Hashable {
    /// The broker stopped reading from this connection's publishers (`connection.blocked`), for the reason given.
    case blocked(reason: String)
    /// The broker resumed (`connection.unblocked`).
    case unblocked
    /// The connection ended; nil when the application closed it.
    case closed(AMQPError?)
}
