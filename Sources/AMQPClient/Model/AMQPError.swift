/// An error from the AMQP client: a stable code, a one-line message and, when the broker closed a channel
/// or the connection, its reply code and the method that failed.
public struct AMQPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error category.
    public struct Code: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The URL could not be parsed.
        public static let invalidURL = Code(rawValue: "invalid_url")
        /// The TCP or TLS connection could not be established.
        public static let connectionFailed = Code(rawValue: "connection_failed")
        /// The broker refused the credentials or the virtual host.
        public static let authenticationFailed = Code(rawValue: "authentication_failed")
        /// TLS could not be set up (certificate files, verification).
        public static let tls = Code(rawValue: "tls")
        /// The broker closed the channel (`channel.close`); `replyCode` and `message` say why.
        public static let channelClosed = Code(rawValue: "channel_closed")
        /// The broker closed the connection (`connection.close`); `replyCode` and `message` say why.
        public static let connectionClosed = Code(rawValue: "connection_closed")
        /// The connection was lost: socket error, EOF or missed heartbeats.
        public static let connectionLost = Code(rawValue: "connection_lost")
        /// The application closed the connection or channel.
        public static let closedByClient = Code(rawValue: "closed_by_client")
        /// The broker refused a published message (`basic.nack`).
        public static let publishNacked = Code(rawValue: "publish_nacked")
        /// A mandatory message could not be routed to any queue (`basic.return`).
        public static let publishReturned = Code(rawValue: "publish_returned")
        /// The connection's outcome for a publish is unknown because the connection went away before a confirm.
        public static let publishUnconfirmed = Code(rawValue: "publish_unconfirmed")
        /// The broker cancelled a consumer (for example, its queue was deleted).
        public static let consumerCancelled = Code(rawValue: "consumer_cancelled")
        /// An argument was not acceptable (too long, wrong state).
        public static let invalidArgument = Code(rawValue: "invalid_argument")
        /// rabbitmq-c reported an error that fits no other code.
        public static let library = Code(rawValue: "library")
    }

    /// The category.
    public var code: Code
    /// One line for people.
    public var message: String
    /// The AMQP reply code when the broker closed a channel or connection, or returned a message.
    public var replyCode: UInt16?

    /// Creates an error.
    public init(_ code: Code, _ message: String, replyCode: UInt16? = nil) {
        self.code = code
        self.message = message
        self.replyCode = replyCode
    }

    public var description: String {
        if let replyCode { return "\(code) (\(replyCode)): \(message)" }
        return "\(code): \(message)"
    }
}
