import BadgeWire

/// What a recorded push shows on a phone, read from its body: APNs's payload, or for FCM the APNs payload of
/// `message.apns.payload` (else `message.data` and `message.notification`). Read when the devices, the filters or
/// the web view ask, never while recording.
struct PushContent: Sendable, Equatable {
    /// An alert (it has `aps.alert`), a badge-only push (a badge and no alert), or anything else.
    enum Kind: String, Sendable, CaseIterable {
        case alert
        case badgeOnly = "badge_only"
        case other
    }

    var kind: Kind = .other
    /// `type`.
    var type: String?
    /// `aps.badge` (FCM without an APNs payload: `message.data.badge`).
    var badge: Int?
    /// `badge_version`.
    var badgeVersion: Int?
    /// The integer members of `counts`.
    var counts: [String: Int] = [:]
    /// `aps.alert.title` (or the alert itself when it is a string).
    var title: String?
    /// `aps.alert.body`.
    var body: String?
    /// `aps.thread-id`.
    var thread: String?
    /// FCM: `message.apns.headers.apns-topic`.
    var fcmTopic: String?

    /// Reads `body`; a body that is not a JSON object gives kind `other` and nothing else.
    init<Bytes: Collection<UInt8>>(body: Bytes, provider: PushProvider) {
        guard let root = try? JSONValue.parse(Array(body)), root.objectMembers != nil else { return }
        var payload: JSONValue? = root
        if provider == .fcm {
            let message = root[FCMMessageKey.message]
            payload = message?[FCMMessageKey.apns]?[FCMMessageKey.payload]
            self.fcmTopic = message?[FCMMessageKey.apns]?["headers"]?["apns-topic"]?.stringValue
            if payload?.objectMembers == nil {
                self.readFCM(message)
                return
            }
        }
        guard let payload else { return }
        let aps = payload[APNsPayloadKey.aps]
        self.type = payload[APNsPayloadKey.type]?.stringValue
        self.badge = Self.integer(aps?[APNsPayloadKey.badge])
        self.badgeVersion = Self.integer(payload[APNsPayloadKey.badgeVersion])
        for (key, value) in payload[APNsPayloadKey.counts]?.objectMembers ?? [] {
            if let number = Self.integer(value) {
                self.counts[key] = number
            }
        }
        self.thread = aps?[APNsPayloadKey.threadID]?.stringValue
        if let alert = aps?[APNsPayloadKey.alert], !alert.isNull {
            self.kind = .alert
            if let text = alert.stringValue {
                self.title = text
            } else {
                self.title = alert[APNsPayloadKey.title]?.stringValue
                self.body = alert[APNsPayloadKey.body]?.stringValue
            }
        } else if self.badge != nil {
            self.kind = .badgeOnly
        }
    }

    /// An FCM message without an APNs payload: `data` and `notification`.
    private mutating func readFCM(_ message: JSONValue?) {
        let data = message?[FCMMessageKey.data]
        self.type = data?[APNsPayloadKey.type]?.stringValue
        self.badge = Self.integer(data?[APNsPayloadKey.badge])
        self.badgeVersion = Self.integer(data?[APNsPayloadKey.badgeVersion])
        for key in ["unread_notifications", "unseen_notifications", "unread_messages"] {
            if let number = Self.integer(data?[key]) {
                self.counts[key] = number
            }
        }
        if let notification = message?[FCMMessageKey.notification], notification.objectMembers != nil {
            self.kind = .alert
            self.title = notification[APNsPayloadKey.title]?.stringValue
            self.body = notification[APNsPayloadKey.body]?.stringValue
        } else if self.badge != nil {
            self.kind = .badgeOnly
        }
    }

    /// An integer, or a string holding one.
    private static func integer(_ value: JSONValue?) -> Int? {
        if let value = value?.int64Value {
            return Int(exactly: value)
        }
        return value?.stringValue.flatMap { Int($0) }
    }
}
