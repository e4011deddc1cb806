import BadgeWire

/// Builds the APNs or FCM HTTP request for a ``PlannedPush`` (contract section 3).
///
/// APNs: `POST /3/device/{token}` with `apns-topic` (the device's topic or ``defaultAPNsTopic``),
/// `apns-push-type: alert` and `apns-priority` (10 for alerts; 5 for badge-only pushes, which interrupt nobody and
/// may be delivered at the device's convenience), `apns-id`, and for badge-only pushes
/// `apns-collapse-id: badge` (the newest badge replaces an older one APNs still holds). The sender adds
/// `apns-expiration` and `authorization` when it sends. FCM: `POST
/// /v1/projects/{project}/messages:send` with `{"message":{…}}`. Every body is at most ``maxBodyBytes``;
/// alert text is shortened on a grapheme boundary (with "…") to fit.
public struct PushPayloadBuilder: Sendable {
    /// The largest body sent, for APNs and FCM alike.
    public static let maxBodyBytes = 4096
    /// The `apns-collapse-id` of badge-only pushes: a newer badge replaces an older one on the device.
    public static let badgeCollapseID = "badge"

    /// The APNs topic for devices registered without one.
    public var defaultAPNsTopic: String
    /// The Firebase project id in FCM paths.
    public var fcmProject: String
    /// Where recent alert texts were cut, shared by the pushes this builder (and its copies) builds.
    public let cuts: AlertCuts

    /// Creates a builder.
    public init(defaultAPNsTopic: String, fcmProject: String = "badgepipe", cuts: AlertCuts = AlertCuts()) {
        self.defaultAPNsTopic = defaultAPNsTopic
        self.fcmProject = fcmProject
        self.cuts = cuts
    }

    /// The HTTP request for `push`; `defaultTopic` and `fcmProject`, when given, are its app's (the `apns-topic`
    /// of a device registered without one, the project in the FCM path) instead of the builder's.
    public func build(_ push: PlannedPush, defaultTopic: String? = nil, fcmProject: String? = nil) -> PushRequest {
        switch push.provider {
        case .apns: return buildAPNs(push, defaultTopic: defaultTopic ?? defaultAPNsTopic)
        case .fcm: return buildFCM(push, project: fcmProject ?? self.fcmProject)
        }
    }

    /// The `apns-id` of `push`: for alerts derived from the event id and the token, for badge-only pushes
    /// from the user, the badge version and the token (uppercase RFC 4122 version-5 UUIDs).
    public static func apnsID(for push: PlannedPush) -> String {
        switch push.kind {
        case .alert(let event):
            return NameBasedUUID.alertID(eventID: event.id, token: push.token)
        case .badgeOnly:
            return NameBasedUUID.badgeID(user: push.recipient, badgeVersion: push.badgeVersion, token: push.token)
        }
    }

    /// The `aps.thread-id` that groups alerts of `event` on the device: `post:<post_id>` (amen, comment,
    /// mention), `conversation:<id>` (message, message_request_accepted), `follows` (follow,
    /// follow_request_accepted), `reminders` (prayer_reminder); `nil` otherwise.
    public static func threadID(for event: Event) -> String? {
        switch event.type {
        case .amen, .comment, .mention:
            return event.postID.map { "post:\($0)" }
        case .message, .messageRequestAccepted:
            return event.conversationID.map { "conversation:\($0)" }
        case .follow, .followRequestAccepted:
            return "follows"
        case .prayerReminder:
            return "reminders"
        default:
            return nil
        }
    }

    /// The APNs payload object of `push` with the given alert text (ignored for badge-only pushes).
    ///
    /// Alert: `{"aps":{"alert":{"title","body"},"badge","sound":"default","thread-id"},"type","event_id",
    /// "notification_id" (notifications),"conversation_id" (message, message_request_accepted),
    /// "badge_version","counts"}`. Badge-only: `{"aps":{"badge"},"type","badge_version","counts"}`.
    public func apnsPayload(_ push: PlannedPush, alert text: AlertText) -> JSONValue {
        typealias Key = APNsPayloadKey
        var aps: [(key: String, value: JSONValue)] = []
        var members: [(key: String, value: JSONValue)] = []
        switch push.kind {
        case .alert(let event):
            aps.append((key: Key.alert, value: [Key.title: .string(text.title), Key.body: .string(text.body)]))
            aps.append((key: Key.badge, value: .int(Int64(push.badge))))
            aps.append((key: Key.sound, value: "default"))
            if let thread = Self.threadID(for: event) { aps.append((key: Key.threadID, value: .string(thread))) }
            members.append((key: Key.aps, value: .object(aps)))
            members.append((key: Key.type, value: .string(event.type.rawValue)))
            members.append((key: Key.eventID, value: .string(event.id)))
            if event.type.createsNotification {
                members.append((key: Key.notificationID, value: .string(event.id)))
            }
            if let conversation = event.conversationID, event.type == .message || event.type == .messageRequestAccepted
            {
                members.append((key: Key.conversationID, value: .string(conversation)))
            }
        case .badgeOnly:
            aps.append((key: Key.badge, value: .int(Int64(push.badge))))
            members.append((key: Key.aps, value: .object(aps)))
            members.append((key: Key.type, value: .string(push.eventType.rawValue)))
        }
        members.append((key: Key.badgeVersion, value: .int(push.badgeVersion)))
        members.append((key: Key.counts, value: push.counts.jsonObject()))
        return .object(members)
    }

    /// The FCM HTTP v1 body of `push`: `{"message":{"token","apns":{"payload"},"android":{"notification":
    /// {"title","body" (alerts),"notification_count"}},"data":{…string values…}}}`.
    public func fcmBody(_ push: PlannedPush, alert text: AlertText) -> JSONValue {
        typealias Key = FCMMessageKey
        var notification: [(key: String, value: JSONValue)] = []
        var data: [(key: String, value: JSONValue)] = [(key: "type", value: .string(push.eventType.rawValue))]
        if push.kind.isAlert {
            notification.append((key: APNsPayloadKey.title, value: .string(text.title)))
            notification.append((key: APNsPayloadKey.body, value: .string(text.body)))
        }
        notification.append((key: Key.notificationCount, value: .int(Int64(push.badge))))
        data.append((key: "badge", value: .string(String(push.badge))))
        data.append((key: "badge_version", value: .string(String(push.badgeVersion))))
        data.append((key: "unread_notifications", value: .string(String(push.counts.unreadNotifications))))
        data.append((key: "unseen_notifications", value: .string(String(push.counts.unseenNotifications))))
        data.append((key: "unread_messages", value: .string(String(push.counts.unreadMessages))))
        if push.kind.isAlert {
            data.append((key: "event_id", value: .string(push.eventID)))
        }
        let message: JSONValue = [
            Key.token: .string(push.token),
            Key.apns: [Key.payload: apnsPayload(push, alert: text)],
            Key.android: [Key.notification: .object(notification)],
            Key.data: .object(data),
        ]
        return [Key.message: message]
    }

    // MARK: - Requests

    private func buildAPNs(_ push: PlannedPush, defaultTopic: String) -> PushRequest {
        let apnsID = Self.apnsID(for: push)
        var headers: [(String, String)] = [
            ("apns-topic", push.topic ?? defaultTopic),
            // A badge change is a user-visible effect, so badge-only pushes are `alert` pushes too: Apple's
            // `background` type is for silent `content-available` pushes and allows no `badge`.
            ("apns-push-type", "alert"),
            ("apns-priority", push.kind.isAlert ? "10" : "5"),
            ("apns-id", apnsID),
        ]
        if !push.kind.isAlert { headers.append(("apns-collapse-id", Self.badgeCollapseID)) }
        headers.append(("content-type", "application/json"))
        let body = fittedBody(push) { text in apnsPayload(push, alert: text) }
        return PushRequest(
            provider: .apns, token: push.token, path: "/3/device/\(push.token)", headers: headers, body: body,
            apnsID: apnsID, environment: push.environment)
    }

    private func buildFCM(_ push: PlannedPush, project: String) -> PushRequest {
        let body = fittedBody(push) { text in fcmBody(push, alert: text) }
        return PushRequest(
            provider: .fcm, token: push.token, path: "/v1/projects/\(project)/messages:send",
            headers: [("content-type", "application/json")], body: body, apnsID: nil, environment: nil)
    }

    private func fittedBody(_ push: PlannedPush, render: (AlertText) -> JSONValue) -> [UInt8] {
        guard case .alert(let event) = push.kind else {
            return render(AlertText(title: "", body: "")).serialized()
        }
        let text = AlertText(event: event, previews: push.previews)
        // The text and its layout: the event, the preference and the provider (an event id names one event).
        let key = "\(push.provider.rawValue) \(push.previews) \(event.id)"
        return Self.fit(text, limit: Self.maxBodyBytes, cuts: cuts, key: key) { render($0).serialized() }
    }
}
