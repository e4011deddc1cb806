/// Where a consumer's messages go when the connection's own thread hands them over directly (see
/// ``AMQPChannel/consume(queue:consumerTag:noAck:exclusive:arguments:handler:)``), rather than through an
/// ``AMQPConsumer`` sequence, whose reader is a task that wakes up for each burst of messages.
///
/// Both closures run on the connection's thread, which reads and writes for every channel of the connection: they
/// must return at once, and never block or wait (storing the message and resuming a waiting task is fine).
public struct AMQPMessageHandler: Sendable {
    /// Called with each message, in the order the broker sent them.
    public var message: @Sendable (AMQPMessage) -> Void
    /// Called once, when the consumer ends: with nil when the application closed the channel, with the error when
    /// the broker closed it, cancelled the consumer, or the connection was lost. No message follows it.
    public var end: @Sendable ((any Error)?) -> Void
    /// The longest body this consumer keeps: a longer one is not copied out of the library's buffer, and its
    /// message arrives with an empty ``AMQPMessage/body`` and its length in ``AMQPMessage/bodySize``. Nil keeps
    /// every body. (A worker parks such a message anyway; keeping a prefetch's worth of megabyte bodies in memory
    /// for that is what this avoids.)
    public var maxBodyBytes: Int?

    /// A handler of `message` and `end`.
    public init(
        message: @escaping @Sendable (AMQPMessage) -> Void, end: @escaping @Sendable ((any Error)?) -> Void,
        maxBodyBytes: Int? = nil
    ) {
        self.message = message
        self.end = end
        self.maxBodyBytes = maxBodyBytes
    }
}
