/// A channel on an `AMQPConnection`: topology, publishing, consuming and acknowledgements.
///
/// A value that names the channel; copies refer to the same channel. Once the broker closes the channel
/// (for example after a declare with conflicting arguments) every call throws that `channelClosed` error;
/// open a new channel with `AMQPConnection.openChannel()`.
public struct AMQPChannel: Sendable, Hashable {
    /// The channel number on its connection.
    public let id: UInt16
    let mailbox: Mailbox

    init(id: UInt16, mailbox: Mailbox) {
        self.id = id
        self.mailbox = mailbox
    }

    public static func == (lhs: AMQPChannel, rhs: AMQPChannel) -> Bool {
        lhs.id == rhs.id && lhs.mailbox === rhs.mailbox
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(ObjectIdentifier(mailbox))
    }

    static func send(_ operation: Command.Operation, channel: UInt16, mailbox: Mailbox) async throws -> Command.Reply {
        try await withCheckedThrowingContinuation { continuation in
            mailbox.submit(Command(channel: channel, operation: operation, promise: .continuation(continuation)))
        }
    }

    @discardableResult
    private func send(_ operation: Command.Operation) async throws -> Command.Reply {
        try await Self.send(operation, channel: id, mailbox: mailbox)
    }

    // MARK: Topology

    /// Declares an exchange (`passive` only checks that it exists).
    public func declareExchange(
        _ name: String,
        type: AMQPExchangeType,
        durable: Bool = true,
        autoDelete: Bool = false,
        `internal`: Bool = false,
        passive: Bool = false,
        arguments: AMQPTable = [:]
    ) async throws {
        try await send(
            .exchangeDeclare(
                name: name, type: type.rawValue, passive: passive, durable: durable, autoDelete: autoDelete,
                isInternal: `internal`, arguments: arguments))
    }

    /// Deletes an exchange.
    public func deleteExchange(_ name: String, ifUnused: Bool = false) async throws {
        try await send(.exchangeDelete(name: name, ifUnused: ifUnused))
    }

    /// Declares a queue. Arguments such as `x-queue-type: quorum`, `x-single-active-consumer: true`,
    /// `x-delivery-limit` and `x-dead-letter-exchange` go in `arguments`.
    @discardableResult
    public func declareQueue(
        _ name: String,
        durable: Bool = true,
        exclusive: Bool = false,
        autoDelete: Bool = false,
        passive: Bool = false,
        arguments: AMQPTable = [:]
    ) async throws -> AMQPQueueInfo {
        let reply = try await send(
            .queueDeclare(
                name: name, passive: passive, durable: durable, exclusive: exclusive, autoDelete: autoDelete,
                arguments: arguments))
        guard case .queue(let info) = reply else { throw AMQPError(.library, "queue.declare: unexpected reply") }
        return info
    }

    /// Binds a queue to an exchange.
    public func bindQueue(
        _ queue: String,
        exchange: String,
        routingKey: String,
        arguments: AMQPTable = [:]
    ) async throws {
        try await send(.queueBind(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments))
    }

    /// Deletes a queue and returns how many messages it held.
    @discardableResult
    public func deleteQueue(_ name: String, ifUnused: Bool = false, ifEmpty: Bool = false) async throws -> UInt32 {
        let reply = try await send(.queueDelete(name: name, ifUnused: ifUnused, ifEmpty: ifEmpty))
        guard case .messageCount(let count) = reply else { return 0 }
        return count
    }

    /// Removes every ready message from a queue and returns how many there were.
    @discardableResult
    public func purgeQueue(_ name: String) async throws -> UInt32 {
        let reply = try await send(.queuePurge(name: name))
        guard case .messageCount(let count) = reply else { return 0 }
        return count
    }

    // MARK: Publishing

    /// Puts the channel in confirm mode: from now on `publish` returns only when the broker has confirmed the
    /// message, and throws when it nacks or returns it.
    public func confirmSelect() async throws {
        try await send(.confirmSelect)
    }

    /// Publishes a message.
    ///
    /// In confirm mode this returns once the broker took responsibility for the message (`basic.ack`), and throws
    /// `publishNacked`, `publishReturned` (a `mandatory` message no queue took) or `publishUnconfirmed` (the channel
    /// or connection ended first: the message may or may not have been routed). Many publishes may be in flight at
    /// once from concurrent tasks. Without confirm mode it returns once the frames were written.
    ///
    /// A mandatory publish in confirm mode carries the header `x-amqp-client-publish-tag`, which lets the client
    /// match a `basic.return` to its message.
    public func publish(
        _ body: [UInt8],
        exchange: String,
        routingKey: String,
        mandatory: Bool = false,
        properties: AMQPProperties = AMQPProperties()
    ) async throws {
        try await send(
            .publish(
                Command.Publish(
                    exchange: exchange, routingKey: routingKey, body: body, properties: properties,
                    mandatory: mandatory)))
    }

    /// Hands a message to the connection now and returns at once; await the returned confirmation for the outcome
    /// (the same outcomes as `publish`). Messages handed over from one task in sequence reach the broker in that
    /// order, which `publish` from concurrent tasks does not promise: use this to keep a window of confirms in
    /// flight while preserving order.
    public func publishInOrder(
        _ body: [UInt8],
        exchange: String,
        routingKey: String,
        mandatory: Bool = false,
        properties: AMQPProperties = AMQPProperties()
    ) -> AMQPPublishConfirmation {
        let confirmation = AMQPPublishConfirmation()
        let request = Command.Publish(
            exchange: exchange, routingKey: routingKey, body: body, properties: properties, mandatory: mandatory)
        mailbox.submit(Command(channel: id, operation: .publish(request), promise: .confirmation(confirmation)))
        return confirmation
    }

    // MARK: Consuming

    /// Limits how many unacked messages the broker sends to each consumer on this channel.
    public func qos(prefetchCount: UInt16, global: Bool = false) async throws {
        try await send(.qos(prefetchCount: prefetchCount, global: global))
    }

    /// Starts a consumer. Messages arrive on the returned sequence until the channel or connection ends.
    ///
    /// There is deliberately no cancel: to stop consuming, close the channel. `basic.cancel` while holding unacked
    /// messages lets a single-active-consumer queue hand later messages to another consumer before the unacked
    /// ones come back, which breaks ordering; closing the channel does not.
    public func consume(
        queue: String,
        consumerTag: String = "",
        noAck: Bool = false,
        exclusive: Bool = false,
        arguments: AMQPTable = [:]
    ) async throws -> AMQPConsumer {
        let (stream, continuation) = AsyncThrowingStream<AMQPMessage, any Error>.makeStream()
        let handler = AMQPMessageHandler(
            message: { continuation.yield($0) },
            end: { error in
                if let error { continuation.finish(throwing: error) } else { continuation.finish() }
            })
        let tag = try await consume(
            queue: queue, consumerTag: consumerTag, noAck: noAck, exclusive: exclusive, arguments: arguments,
            handler: handler)
        return AMQPConsumer(tag: tag, stream: stream)
    }

    /// Starts a consumer whose messages the connection's thread hands to `handler` as it reads them (see
    /// ``AMQPMessageHandler``: it must return at once); returns the consumer tag. The handler's `end` is called
    /// once, when the channel or connection ends; when the consumer cannot start, with the error this throws.
    /// As with ``consume(queue:consumerTag:noAck:exclusive:arguments:)``, there is no cancel: close the channel.
    @discardableResult
    public func consume(
        queue: String,
        consumerTag: String = "",
        noAck: Bool = false,
        exclusive: Bool = false,
        arguments: AMQPTable = [:],
        handler: AMQPMessageHandler
    ) async throws -> String {
        let reply = try await send(
            .consume(
                Command.Consume(
                    queue: queue, consumerTag: consumerTag, noAck: noAck, exclusive: exclusive, arguments: arguments,
                    handler: handler)))
        guard case .consumerTag(let tag) = reply else { throw AMQPError(.library, "basic.consume: unexpected reply") }
        return tag
    }

    /// Fetches one message with `basic.get`; nil when the queue is empty.
    public func get(queue: String, noAck: Bool = false) async throws -> AMQPMessage? {
        let reply = try await send(.get(queue: queue, noAck: noAck))
        guard case .message(let message) = reply else { throw AMQPError(.library, "basic.get: unexpected reply") }
        return message
    }

    /// Acknowledges a message; with `multiple`, every unacked message up to and including it.
    public func ack(deliveryTag: UInt64, multiple: Bool = false) async throws {
        try await send(.ack(deliveryTag: deliveryTag, multiple: multiple))
    }

    /// Queues the same acknowledgement as ``ack(deliveryTag:multiple:)`` and returns at once, without waiting for
    /// the connection's thread to write it. Commands on a connection run in the order they were queued, so a later
    /// ack or ``close()`` of this channel goes after it. A failure is not reported here: it is the channel's or
    /// the connection's, and shows there (the consumer's stream ends, the next awaited call throws), and the
    /// broker hands unacknowledged messages back.
    public func queueAck(deliveryTag: UInt64, multiple: Bool = false) {
        mailbox.submit(
            Command(channel: id, operation: .ack(deliveryTag: deliveryTag, multiple: multiple), promise: nil))
    }

    /// Sets the prefetch count without waiting for the broker's answer: it takes effect for the messages that
    /// follow, in order with this channel's other commands; a failure closes the channel.
    public func queueQoS(prefetchCount: UInt16) {
        mailbox.submit(Command(channel: id, operation: .qos(prefetchCount: prefetchCount, global: false), promise: nil))
    }

    /// Negatively acknowledges messages. Prefer `requeue: false` (dead-letters the message): a requeued message
    /// goes behind later ones.
    public func nack(deliveryTag: UInt64, multiple: Bool = false, requeue: Bool = false) async throws {
        try await send(.nack(deliveryTag: deliveryTag, multiple: multiple, requeue: requeue))
    }

    /// Rejects one message.
    public func reject(deliveryTag: UInt64, requeue: Bool = false) async throws {
        try await send(.reject(deliveryTag: deliveryTag, requeue: requeue))
    }

    /// Closes the channel. Unacked messages return to their queues; publishes awaiting a confirm that does not
    /// arrive before `close-ok` fail with `publishUnconfirmed`.
    public func close() async throws {
        try await send(.closeChannel)
    }
}
