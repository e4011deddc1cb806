/// What the application asks the connection's thread to do. Carried through the `Mailbox`; the thread
/// answers through `promise`.
struct Command: Sendable {
    /// Where the answer goes: an awaiting task, or a confirmation object the caller awaits later.
    enum Promise: Sendable {
        case continuation(CheckedContinuation<Reply, any Error>)
        case confirmation(AMQPPublishConfirmation)

        func resume(returning reply: Reply) {
            switch self {
            case .continuation(let continuation): continuation.resume(returning: reply)
            case .confirmation(let confirmation): confirmation.resolve(.success(()))
            }
        }

        func resume(throwing error: any Error) {
            switch self {
            case .continuation(let continuation): continuation.resume(throwing: error)
            case .confirmation(let confirmation): confirmation.resolve(.failure(error))
            }
        }
    }

    /// A request to publish one message.
    struct Publish: Sendable {
        var exchange: String
        var routingKey: String
        var body: [UInt8]
        var properties: AMQPProperties
        var mandatory: Bool
    }

    /// A request to start a consumer.
    struct Consume: Sendable {
        var queue: String
        var consumerTag: String
        var noAck: Bool
        var exclusive: Bool
        var arguments: AMQPTable
        var handler: AMQPMessageHandler
    }

    enum Operation: Sendable {
        case openChannel
        case closeChannel
        case closeConnection
        case exchangeDeclare(
            name: String, type: String, passive: Bool, durable: Bool, autoDelete: Bool, isInternal: Bool,
            arguments: AMQPTable)
        case exchangeDelete(name: String, ifUnused: Bool)
        case queueDeclare(
            name: String, passive: Bool, durable: Bool, exclusive: Bool, autoDelete: Bool, arguments: AMQPTable)
        case queueBind(queue: String, exchange: String, routingKey: String, arguments: AMQPTable)
        case queueDelete(name: String, ifUnused: Bool, ifEmpty: Bool)
        case queuePurge(name: String)
        case qos(prefetchCount: UInt16, global: Bool)
        case confirmSelect
        case publish(Publish)
        case consume(Consume)
        case ack(deliveryTag: UInt64, multiple: Bool)
        case nack(deliveryTag: UInt64, multiple: Bool, requeue: Bool)
        case reject(deliveryTag: UInt64, requeue: Bool)
        case get(queue: String, noAck: Bool)
    }

    /// What an operation produced.
    enum Reply: Sendable {
        case done
        case channel(UInt16)
        case queue(AMQPQueueInfo)
        case messageCount(UInt32)
        case consumerTag(String)
        case message(AMQPMessage?)
    }

    var channel: UInt16
    var operation: Operation
    var promise: Promise?

    /// Fails the command without running it; a consume's handler ends with the same error.
    func fail(_ error: AMQPError) {
        if case .consume(let request) = operation { request.handler.end(error) }
        promise?.resume(throwing: error)
    }
}
