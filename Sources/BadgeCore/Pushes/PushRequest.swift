import BadgeWire

/// One HTTP request to APNs or FCM, ready to send (the sender adds the host and authorization).
public struct PushRequest: Sendable {
    /// Which service it goes to.
    public var provider: PushProvider
    /// The device token.
    public var token: String
    /// The request path: `/3/device/{token}` (APNs) or `/v1/projects/{project}/messages:send` (FCM).
    public var path: String
    /// The request headers, in order (lowercase names).
    public var headers: [(String, String)]
    /// The JSON body, at most 4096 bytes unless the token alone is too long to fit.
    public var body: [UInt8]
    /// The `apns-id` header value (APNs only): stable across re-sends of the same push.
    public var apnsID: String?
    /// The device's APNs environment, to choose the APNs host; `nil` when unknown (or FCM).
    public var environment: APNsEnvironment?
    /// The app whose credentials it goes with; `nil`: the deployment's default app.
    public var app: String?

    /// Creates a request.
    public init(
        provider: PushProvider, token: String, path: String, headers: [(String, String)], body: [UInt8],
        apnsID: String?, environment: APNsEnvironment? = nil
    ) {
        self.provider = provider
        self.token = token
        self.path = path
        self.headers = headers
        self.body = body
        self.apnsID = apnsID
        self.environment = environment
    }

    /// The value of the first header named `name` (case-insensitive), if any.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first(where: { $0.0.lowercased() == wanted })?.1
    }

    /// The body as a string.
    public var bodyString: String {
        String(decoding: body, as: UTF8.self)
    }
}
