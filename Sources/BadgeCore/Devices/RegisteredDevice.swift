import BadgeWire

/// A device that receives a user's pushes, as registered by `device_registered`.
public struct RegisteredDevice: Sendable, Equatable, Hashable {
    /// The push token.
    public var token: String
    /// The provider that delivers to it.
    public var provider: PushProvider
    /// The APNs topic it was registered with; `nil` means the deployment's default topic.
    public var topic: String?
    /// The APNs environment it was registered with, if given.
    public var environment: APNsEnvironment?
    /// The app it was registered for (`device.app`), if given.
    public var app: String?

    /// Creates a device.
    public init(
        token: String, provider: PushProvider, topic: String? = nil, environment: APNsEnvironment? = nil,
        app: String? = nil
    ) {
        self.token = token
        self.provider = provider
        self.topic = topic
        self.environment = environment
        self.app = app
    }
}
