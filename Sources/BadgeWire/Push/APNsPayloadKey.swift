/// The member names of an APNs payload as BadgePipe sends it (contract section 3) and the sink reads it:
/// `{"aps":{"alert":{"title","body"},"badge","sound","thread-id"},"type","event_id","notification_id",
/// "conversation_id","badge_version","counts"}`.
public enum APNsPayloadKey {
    /// The Apple-defined dictionary.
    public static let aps = "aps"
    /// In `aps`: the alert dictionary (absent from badge-only pushes).
    public static let alert = "alert"
    /// In `aps.alert`: the title.
    public static let title = "title"
    /// In `aps.alert`: the body text.
    public static let body = "body"
    /// In `aps`: the badge number.
    public static let badge = "badge"
    /// In `aps`: the sound (`default` for alerts).
    public static let sound = "sound"
    /// In `aps`: the thread that groups alerts on the device.
    public static let threadID = "thread-id"
    /// The event type that caused the push.
    public static let type = "type"
    /// The id of the event that caused an alert.
    public static let eventID = "event_id"
    /// The notification an alert is about.
    public static let notificationID = "notification_id"
    /// The conversation a message alert is about.
    public static let conversationID = "conversation_id"
    /// The recipient's badge version the push carries.
    public static let badgeVersion = "badge_version"
    /// The recipient's counts.
    public static let counts = "counts"
}
