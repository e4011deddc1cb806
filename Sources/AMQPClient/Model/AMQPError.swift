import BadgeSupport

/// An error from the AMQP client: a stable code, a one-line message and, when the broker closed a channel
/// or the connection, its reply code and the method that failed.
public struct AMQPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error category.
    public typealias Code = ErrorCode<AMQPError>

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

    /// True when the broker could not be reached or went away (`connectionFailed`, `connectionLost`,
    /// `connectionClosed`): another node, or the same one later, may serve. The one rule for moving on.
    public var isUnreachable: Bool {
        code == .connectionFailed || code == .connectionLost || code == .connectionClosed
    }

    public var description: String {
        if let replyCode { return "\(code) (\(replyCode)): \(message)" }
        return "\(code): \(message)"
    }
}

extension ErrorCode<AMQPError> {
    /// The URL could not be parsed.
    public static var invalidURL: Self { Self("invalid_url") }
    /// The TCP or TLS connection could not be established.
    public static var connectionFailed: Self { Self("connection_failed") }
    /// The broker refused the credentials or the virtual host.
    public static var authenticationFailed: Self { Self("authentication_failed") }
    /// TLS could not be set up (certificate files, verification).
    public static var tls: Self { Self("tls") }
    /// The broker closed the channel (`channel.close`); `replyCode` and `message` say why.
    public static var channelClosed: Self { Self("channel_closed") }
    /// The broker closed the connection (`connection.close`); `replyCode` and `message` say why.
    public static var connectionClosed: Self { Self("connection_closed") }
    /// The connection was lost: socket error, EOF or missed heartbeats.
    public static var connectionLost: Self { Self("connection_lost") }
    /// The application closed the connection or channel.
    public static var closedByClient: Self { Self("closed_by_client") }
    /// The broker refused a published message (`basic.nack`).
    public static var publishNacked: Self { Self("publish_nacked") }
    /// A mandatory message could not be routed to any queue (`basic.return`).
    public static var publishReturned: Self { Self("publish_returned") }
    /// The connection's outcome for a publish is unknown because the connection went away before a confirm.
    public static var publishUnconfirmed: Self { Self("publish_unconfirmed") }
    /// The broker cancelled a consumer (for example, its queue was deleted).
    public static var consumerCancelled: Self { Self("consumer_cancelled") }
    /// An argument was not acceptable (too long, wrong state).
    public static var invalidArgument: Self { Self("invalid_argument") }
    /// rabbitmq-c reported an error that fits no other code.
    public static var library: Self { Self("library") }
}
