/// The type of an event, as in the contract's `type` field.
public enum EventType: String, CaseIterable, Sendable {
    /// Someone followed the recipient. Creates a notification.
    case follow
    /// Someone said Amen to the recipient's post. Creates a notification.
    case amen
    /// Someone commented on the recipient's post. Creates a notification.
    case comment
    /// Someone mentioned the recipient. Creates a notification.
    case mention
    /// Someone accepted the recipient's follow request. Creates a notification.
    case followRequestAccepted = "follow_request_accepted"
    /// Someone accepted the recipient's message request. Creates a notification.
    case messageRequestAccepted = "message_request_accepted"
    /// A scheduled prayer reminder. Creates a notification.
    case prayerReminder = "prayer_reminder"
    /// A chat message: one unread message in a conversation.
    case message
    /// The recipient read a conversation up to `until`.
    case conversationRead = "conversation_read"
    /// The recipient read the listed notifications.
    case notificationRead = "notification_read"
    /// The recipient read every notification up to `until`.
    case notificationsReadAll = "notifications_read_all"
    /// The recipient opened the notification list: notifications up to `until` are seen.
    case notificationsOpened = "notifications_opened"
    /// A device token now receives the recipient's pushes.
    case deviceRegistered = "device_registered"
    /// A device token no longer receives the recipient's pushes.
    case deviceUnregistered = "device_unregistered"
    /// The recipient changed `badge_enabled` and/or `previews`.
    case preferencesUpdated = "preferences_updated"
}

extension EventType {
    /// Whether an event of this type creates a notification (and an alert push).
    public var createsNotification: Bool {
        switch self {
        case .follow, .amen, .comment, .mention, .followRequestAccepted, .messageRequestAccepted, .prayerReminder:
            return true
        default:
            return false
        }
    }

    /// Whether this is a chat message (`message`).
    public var isMessage: Bool { self == .message }

    /// Whether an event of this type causes an alert push: notifications and chat messages.
    public var isAlerting: Bool { createsNotification || isMessage }

    /// Whether this type changes read state or preferences and so may cause badge-only pushes:
    /// `conversation_read`, `notification_read`, `notifications_read_all`, `notifications_opened`,
    /// `preferences_updated`.
    public var isBadgeUpdate: Bool {
        switch self {
        case .conversationRead, .notificationRead, .notificationsReadAll, .notificationsOpened, .preferencesUpdated:
            return true
        default:
            return false
        }
    }

    /// Whether this type manages devices (`device_registered`, `device_unregistered`).
    public var isDeviceEvent: Bool { self == .deviceRegistered || self == .deviceUnregistered }

    /// The fields that the contract requires for this type beyond `id`, `type`, `recipient` and
    /// `occurred_at`, in schema order.
    public var requiredFields: [String] {
        switch self {
        case .follow, .followRequestAccepted: return ["actor"]
        case .amen, .mention: return ["actor", "post_id"]
        case .comment: return ["actor", "post_id", "text"]
        case .messageRequestAccepted, .message: return ["actor", "conversation_id"]
        case .prayerReminder, .notificationsReadAll, .notificationsOpened: return []
        case .conversationRead: return ["conversation_id"]
        case .notificationRead: return ["notification_ids"]
        case .deviceRegistered, .deviceUnregistered: return ["device"]
        case .preferencesUpdated: return ["preferences"]
        }
    }
}
