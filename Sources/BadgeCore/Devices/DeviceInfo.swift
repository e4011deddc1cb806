import BadgeWire

/// The `device` field of `device_registered` / `device_unregistered` events.
public struct DeviceInfo: Sendable, Equatable, Hashable {
    /// The push token (8–4096 chars of `[A-Za-z0-9_:.-]`).
    public var token: String
    /// The provider; required for `device_registered`.
    public var provider: PushProvider?
    /// The APNs topic (bundle id); `nil` means the deployment's default topic.
    public var topic: String?
    /// The APNs environment, if given.
    public var environment: APNsEnvironment?
    /// The app of the deployment's configuration that serves the device (contract v1.1, 1-64 chars of
    /// `[A-Za-z0-9._-]`); `nil`: its topic selects the app, else the deployment's default app.
    public var app: String?

    /// Creates device info.
    public init(
        token: String, provider: PushProvider? = nil, topic: String? = nil, environment: APNsEnvironment? = nil,
        app: String? = nil
    ) {
        self.token = token
        self.provider = provider
        self.topic = topic
        self.environment = environment
        self.app = app
    }
}
