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
