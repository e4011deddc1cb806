/// What a push body says about the badge, read the same way for APNs and FCM: from the APNs payload, or from
/// FCM's `message.apns.payload`.
public struct PushPayloadSummary: Sendable, Equatable {
    /// The event type (`type`).
    public var type: String?
    /// The badge number (`aps.badge`; a string holding an integer counts too).
    public var badge: Int?
    /// The badge version (`badge_version`; a string holding an integer counts too).
    public var badgeVersion: Int?
    /// The alert title (`aps.alert.title`).
    public var alertTitle: String?

    /// Reads the summary of a push body; nil when the body is not strict JSON or carries no APNs payload object.
    public init?<Bytes: Collection<UInt8>>(body: Bytes, provider: PushProvider) {
        guard let root = try? JSONValue.parse(Array(body)) else { return nil }
        let payload: JSONValue?
        switch provider {
        case .apns:
            payload = root
        case .fcm:
            payload = root[FCMMessageKey.message]?[FCMMessageKey.apns]?[FCMMessageKey.payload]
        }
        guard let payload, payload.objectMembers != nil else { return nil }
        let aps = payload[APNsPayloadKey.aps]
        self.type = payload[APNsPayloadKey.type]?.stringValue
        self.badge = Self.integer(aps?[APNsPayloadKey.badge])
        self.badgeVersion = Self.integer(payload[APNsPayloadKey.badgeVersion])
        self.alertTitle = aps?[APNsPayloadKey.alert]?[APNsPayloadKey.title]?.stringValue
    }

    /// `message.token` of an FCM send body; nil when the body is not strict JSON or has none. Read without building
    /// the body's values (``JSONParser/string(at:)``).
    public static func fcmToken<Bytes: Collection<UInt8>>(in body: Bytes) -> String? {
        Self.readFCMToken(in: body).token
    }

    /// `message.token` of an FCM send body as ``fcmToken(in:)`` reads it, and whether the body read as strict JSON:
    /// when it did, it is also well-formed (``JSONValue/isWellFormed(_:)``), so that need not be read again.
    public static func readFCMToken<Bytes: Collection<UInt8>>(in body: Bytes) -> (token: String?, isStrictJSON: Bool) {
        JSONValue.withBuffer(body) { buffer in
            var parser = JSONParser(bytes: buffer)
            do {
                return (try parser.string(at: Self.fcmTokenPath), true)
            } catch {
                return (nil, false)
            }
        }
    }

    private static let fcmTokenPath = [FCMMessageKey.message, FCMMessageKey.token]

    /// An integer, or a string holding one.
    private static func integer(_ value: JSONValue?) -> Int? {
        if let value = value?.int64Value {
            return Int(exactly: value)
        }
        return value?.stringValue.flatMap { Int($0) }
    }
}
