/// The basic properties of a message (the AMQP content header).
public struct AMQPProperties: Sendable, Hashable {
    /// Whether the broker should write the message to disk.
    public enum DeliveryMode: UInt8, Sendable {
        case transient = 1
        case persistent = 2
    }

    public var contentType: String?
    public var contentEncoding: String?
    public var headers: AMQPTable?
    public var deliveryMode: DeliveryMode?
    public var priority: UInt8?
    public var correlationID: String?
    public var replyTo: String?
    public var expiration: String?
    public var messageID: String?
    /// Seconds since the epoch.
    public var timestamp: UInt64?
    public var type: String?
    public var userID: String?
    public var appID: String?

    /// The header the client adds to each mandatory publish in confirm mode (see `AMQPChannel.publish`). It
    /// travels with the message: whoever copies a received message's properties into a new publish may drop it.
    public static let publishTagHeader = "x-amqp-client-publish-tag"

    /// Creates properties; every field is optional and absent by default.
    public init(
        contentType: String? = nil,
        contentEncoding: String? = nil,
        headers: AMQPTable? = nil,
        deliveryMode: DeliveryMode? = nil,
        priority: UInt8? = nil,
        correlationID: String? = nil,
        replyTo: String? = nil,
        expiration: String? = nil,
        messageID: String? = nil,
        timestamp: UInt64? = nil,
        type: String? = nil,
        userID: String? = nil,
        appID: String? = nil
    ) {
        self.contentType = contentType
        self.contentEncoding = contentEncoding
        self.headers = headers
        self.deliveryMode = deliveryMode
        self.priority = priority
        self.correlationID = correlationID
        self.replyTo = replyTo
        self.expiration = expiration
        self.messageID = messageID
        self.timestamp = timestamp
        self.type = type
        self.userID = userID
        self.appID = appID
    }
}
