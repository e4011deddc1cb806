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

extension PushPayloadBuilder {
    /// The ellipsis appended to shortened text.
    static let ellipsis = "…"

    /// Renders `text` and, if the result exceeds `limit` bytes, shortens the body (then, if needed, the
    /// title) to the longest prefix of whole Characters (extended grapheme clusters) that fits with "…"
    /// appended. Returns the rendering of the best fit; it exceeds `limit` only when even a title and body
    /// of "…" do not fit.
    ///
    /// `render` must write the title and the body whole, each in at least as many bytes as its UTF-8 (the
    /// payloads do: JSON strings, escaped). Then a text longer than `limit` in UTF-8 cannot fit, and one more
    /// Character makes the rendering at least a byte longer: the search looks at no more than `limit` Characters
    /// of a text however long, and never renders a prefix longer than that.
    ///
    /// With `cuts`, a body shortened before under the same `key` (the same text and layout: see ``AlertCuts``)
    /// with as many bytes left for it is cut where it was, and rendered once; `render` must then also write the
    /// body in a number of bytes that does not depend on the other fields.
    static func fit(
        _ text: AlertText, limit: Int, cuts: AlertCuts? = nil, key: String = "", render: (AlertText) -> [UInt8]
    ) -> [UInt8] {
        if text.title.utf8.count + text.body.utf8.count <= limit {
            let full = render(text)
            if full.count <= limit { return full }
        }

        if let bytes = longestFitting(
            text.body, limit: limit, cuts: cuts, key: key, render: { render(AlertText(title: text.title, body: $0)) })
        {
            return bytes
        }
        let shortBody = text.body.isEmpty ? "" : ellipsis
        if let bytes = longestFitting(
            text.title, limit: limit, cuts: nil, key: key, render: { render(AlertText(title: $0, body: shortBody)) })
        {
            return bytes
        }
        return render(AlertText(title: text.title.isEmpty ? "" : ellipsis, body: shortBody))
    }

    /// The largest `k` below the number of Characters of `text` such that `render(prefix(k) + "…")` fits, and that
    /// rendering; `nil` when not even "…" alone fits. The rendered size grows by at least a byte with each Character
    /// (see ``fit(_:limit:cuts:key:render:)``), so `k` is at most `limit` minus the size for `k = 0`, and the search
    /// is exact.
    ///
    /// It guesses where the limit falls from the bytes per Character seen so far (a text of one kind of Character
    /// is found in two or three renderings), and bisects instead whenever a guess did not halve what is left, so it
    /// never takes more than about twice the renderings of a plain bisection.
    private static func longestFitting(
        _ text: String, limit: Int, cuts: AlertCuts?, key: String, render: (String) -> [UInt8]
    ) -> [UInt8]? {
        guard !text.isEmpty else { return nil }
        var best = render(ellipsis)
        guard best.count <= limit else { return nil }
        let cutKey = AlertCuts.Key(layout: key, budget: limit - best.count)
        if let cut = cuts?.cut(text, cutKey) {
            let known = render(String(text.prefix(cut)) + ellipsis)
            if known.count <= limit { return known }
        }
        // Only the Characters that could fit, and one more to know whether the text has more than those.
        let characters = Array(text.prefix(limit - best.count + 1))
        // `low` fits (rendered as `best`); the answer is at most `high`: below the whole text (which did not fit
        // whole), and within what the bytes left allow.
        var low = 0
        var high = min(characters.count - 1, limit - best.count)
        // Bytes per Character between `low` and the last rendering, at least 1.
        var rate = 1
        var bisect = false
        while low < high {
            let guess: Int
            if bisect {
                guess = (low + high + 1) / 2
            } else {
                guess = min(high, max(low + 1, low + (limit - best.count) / rate))
            }
            let candidate = render(String(characters[0..<guess]) + ellipsis)
            let span = high - low
            rate = max(1, (candidate.count - best.count + (guess - low) - 1) / (guess - low))
            if candidate.count <= limit {
                low = guess
                best = candidate
            } else {
                high = guess - 1
            }
            bisect = !bisect && (high - low) * 2 > span
        }
        cuts?.remember(low, of: text, for: cutKey)
        return best
    }
}

/// The visible part of an alert push: `aps.alert.title` and `aps.alert.body`.
public struct AlertText: Sendable, Equatable, Hashable {
    /// The title line.
    public var title: String
    /// The body text.
    public var body: String

    /// Creates an alert text.
    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }

    /// The alert text for a notification or chat message.
    ///
    /// With `previews` false, user-written text (comment, mention and message text) is replaced by a
    /// generic body: "New comment", "New mention", "New message". A missing actor is called "Someone".
    public init(event: Event, previews: Bool) {
        let name = event.actor?.name ?? "Someone"
        let userText = event.text.flatMap { $0.isEmpty ? nil : $0 }
        switch event.type {
        case .follow:
            self.init(title: "New follower", body: "\(name) started following you")
        case .amen:
            self.init(title: "Amen", body: "\(name) said Amen to your post")
        case .comment:
            let body = previews ? (userText ?? "New comment") : "New comment"
            self.init(title: "\(name) commented on your post", body: body)
        case .mention:
            let fallback = "\(name) mentioned you in a post"
            let body = previews ? (userText ?? fallback) : (userText == nil ? fallback : "New mention")
            self.init(title: "\(name) mentioned you", body: body)
        case .followRequestAccepted:
            self.init(title: "Follow request accepted", body: "\(name) accepted your follow request")
        case .messageRequestAccepted:
            self.init(title: "Message request accepted", body: "\(name) accepted your message request")
        case .prayerReminder:
            let title = event.title.flatMap { $0.isEmpty ? nil : $0 } ?? "Prayer reminder"
            self.init(title: title, body: userText ?? "It's time to pray")
        case .message:
            let body = previews ? (userText ?? "New message") : "New message"
            self.init(title: name, body: body)
        default:
            self.init(title: "", body: "")
        }
    }
}
