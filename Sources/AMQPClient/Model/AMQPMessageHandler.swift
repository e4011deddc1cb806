#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
    /// The longest body this consumer keeps in memory: a longer one is written to an unlinked file
    /// (``AMQPMessage/spilledBody``, in ``spillDirectory``) and its message arrives with an empty
    /// ``AMQPMessage/body`` and its length in ``AMQPMessage/bodySize``; when the file cannot be written, the body is
    /// kept in memory after all (it is never dropped). Nil keeps every body in memory. (A worker parks such a
    /// message with its body; keeping a prefetch's worth of megabyte bodies in memory for that is what this avoids.)
    public var maxBodyBytes: Int?
    /// Where bodies over ``maxBodyBytes`` are written: `TMPDIR`, or `/tmp`.
    public var spillDirectory: String

    /// A handler of `message` and `end`.
    public init(
        message: @escaping @Sendable (AMQPMessage) -> Void, end: @escaping @Sendable ((any Error)?) -> Void,
        maxBodyBytes: Int? = nil
    ) {
        self.message = message
        self.end = end
        self.maxBodyBytes = maxBodyBytes
        self.spillDirectory = Self.defaultSpillDirectory
    }

    /// `TMPDIR` when set, else `/tmp`.
    static var defaultSpillDirectory: String {
        let value = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        return value.isEmpty ? "/tmp" : value
    }
}
