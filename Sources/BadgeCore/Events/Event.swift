import BadgeWire

/// One valid event of the contract (see `event.schema.json`).
///
/// Optional fields that do not apply to the type may still be present (the schema allows them); they are
/// kept and re-serialised but have no effect.
public struct Event: Sendable, Equatable {
    /// The unique event id, the idempotency key. For notification types it is also the notification id.
    public var id: String
    /// The event type.
    public var type: EventType
    /// The user whose inbox, counts and devices change.
    public var recipient: String
    /// When it happened at the producer.
    public var occurredAt: Timestamp
    /// Who caused it (notifications and messages).
    public var actor: EventActor?
    /// `post_id` (amen, comment, mention).
    public var postID: String?
    /// `comment_id` (comment).
    public var commentID: String?
    /// `conversation_id` (message, message_request_accepted, conversation_read).
    public var conversationID: String?
    /// `message_id` (message).
    public var messageID: String?
    /// `title` (prayer_reminder).
    public var title: String?
    /// `text` (comment, mention, message, prayer_reminder).
    public var text: String?
    /// `until` (conversation_read, notifications_read_all, notifications_opened).
    public var until: Timestamp?
    /// `notification_ids` (notification_read); empty when absent.
    public var notificationIDs: [String]
    /// `device` (device_registered, device_unregistered).
    public var device: DeviceInfo?
    /// `preferences` (preferences_updated).
    public var preferences: PreferencesChange?

    /// Creates an event. No validation happens here; ``EventDecoder`` validates wire input.
    public init(
        id: String,
        type: EventType,
        recipient: String,
        occurredAt: Timestamp,
        actor: EventActor? = nil,
        postID: String? = nil,
        commentID: String? = nil,
        conversationID: String? = nil,
        messageID: String? = nil,
        title: String? = nil,
        text: String? = nil,
        until: Timestamp? = nil,
        notificationIDs: [String] = [],
        device: DeviceInfo? = nil,
        preferences: PreferencesChange? = nil
    ) {
        self.id = id
        self.type = type
        self.recipient = recipient
        self.occurredAt = occurredAt
        self.actor = actor
        self.postID = postID
        self.commentID = commentID
        self.conversationID = conversationID
        self.messageID = messageID
        self.title = title
        self.text = text
        self.until = until
        self.notificationIDs = notificationIDs
        self.device = device
        self.preferences = preferences
    }

    /// The watermark of a read-state event: `until`, or `occurredAt` when `until` is absent.
    public var effectiveUntil: Timestamp { until ?? occurredAt }

    /// Whether the actor is the recipient (such notifications and messages create nothing).
    public var isSelfAction: Bool { actor?.id == recipient }
}
