import BadgeWire

/// One push that an event causes to one device, with everything its payload needs.
///
/// ``PushPayloadBuilder/build(_:)`` turns it into the HTTP request for APNs or FCM.
public struct PlannedPush: Sendable, Equatable {
    /// The user whose counts the push carries (the event's recipient).
    public var recipient: String
    /// The id of the event that caused the push.
    public var eventID: String
    /// The type of the event that caused the push; the payload's `type`.
    public var eventType: EventType
    /// The device's token.
    public var token: String
    /// The device's provider.
    public var provider: PushProvider
    /// The device's APNs topic; `nil` means the deployment's default topic.
    public var topic: String?
    /// The device's APNs environment, if known.
    public var environment: APNsEnvironment?
    /// The device's app (`device.app`), if it named one: whose credentials and topics the push goes with.
    public var app: String?
    /// Alert or badge-only.
    public var kind: PushKind
    /// The user's counts after the event's effect.
    public var counts: Counts
    /// The badge after the event's effect (0 when the badge is disabled).
    public var badge: Int
    /// The user's badge version after the event's effect.
    public var badgeVersion: Int64
    /// Whether alerts may show user-written text.
    public var previews: Bool

    /// Creates a planned push.
    public init(
        recipient: String,
        eventID: String,
        eventType: EventType,
        token: String,
        provider: PushProvider,
        topic: String? = nil,
        environment: APNsEnvironment? = nil,
        app: String? = nil,
        kind: PushKind,
        counts: Counts,
        badge: Int,
        badgeVersion: Int64,
        previews: Bool = true
    ) {
        self.recipient = recipient
        self.eventID = eventID
        self.eventType = eventType
        self.token = token
        self.provider = provider
        self.topic = topic
        self.environment = environment
        self.app = app
        self.kind = kind
        self.counts = counts
        self.badge = badge
        self.badgeVersion = badgeVersion
        self.previews = previews
    }

    /// Creates a push of `kind` for `event` to `device`.
    public init(
        event: Event, device: RegisteredDevice, kind: PushKind, counts: Counts, badge: Int, badgeVersion: Int64,
        previews: Bool
    ) {
        self.init(
            recipient: event.recipient, eventID: event.id, eventType: event.type, token: device.token,
            provider: device.provider, topic: device.topic, environment: device.environment, app: device.app,
            kind: kind,
            counts: counts, badge: badge, badgeVersion: badgeVersion, previews: previews)
    }
}
