import AMQPClient
import BadgeCore

/// Settings of `badgepipe api` (contract 7.5), with the bounds it keeps (contract 7.2, issue of limits: every one
/// named here, with its default).
public struct APIConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The deployment's badge policy: the same as the workers', so the API's badge is the pushes'.
    public var badgePolicy: BadgePolicy
    /// Where writes are published.
    public var amqp: AMQPConfiguration
    /// The events exchange (`badgepipe.events`, or another namespace's).
    public var exchange: String
    /// The most open streams of this instance; more get `503`.
    public var maxStreams = APIConfiguration.defaultMaxStreams
    /// The most open streams of one user on this instance; more get `429`.
    public var maxStreamsPerUser = APIConfiguration.defaultMaxStreamsPerUser
    /// The largest request body, in bytes; larger gets `413`.
    public var maxBodyBytes = APIConfiguration.defaultMaxBodyBytes
    /// Whether `/demo` serves the demo app's page (``DemoPage``): for development only.
    public var demo = false

    public static let defaultMaxStreams = 10_000
    public static let defaultMaxStreamsPerUser = 10
    /// 64 KiB: the contract's largest event.
    public static let defaultMaxBodyBytes = 65_536
    /// The list's default page size (contract 7.2).
    public static let defaultPageSize = 20

    public init(host: String, port: Int, badgePolicy: BadgePolicy, amqp: AMQPConfiguration, exchange: String) {
        self.host = host
        self.port = port
        self.badgePolicy = badgePolicy
        self.amqp = amqp
        self.exchange = exchange
    }
}
