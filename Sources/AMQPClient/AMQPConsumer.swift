/// The messages of one consumer, in the order the broker sent them. Ends when the channel is closed by the
/// application, and throws when the broker closes the channel or the connection is lost.
public struct AMQPConsumer: AsyncSequence, Sendable {
    public typealias Element = AMQPMessage

    /// The consumer tag (the broker's choice when none was given).
    public let tag: String
    private let stream: AsyncThrowingStream<AMQPMessage, any Error>

    init(tag: String, stream: AsyncThrowingStream<AMQPMessage, any Error>) {
        self.tag = tag
        self.stream = stream
    }

    public func makeAsyncIterator() -> AsyncThrowingStream<AMQPMessage, any Error>.AsyncIterator {
        stream.makeAsyncIterator()
    }
}
