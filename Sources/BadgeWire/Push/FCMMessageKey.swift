/// The member names of an FCM HTTP v1 send body as BadgePipe sends it and the sink reads it:
/// `{"message":{"token","apns":{"payload"},"android":{"notification":{"title","body","notification_count"}},
/// "data":{…}}}`.
public enum FCMMessageKey {
    /// The envelope.
    public static let message = "message"
    /// In `message`: the registration token.
    public static let token = "token"
    /// In `message`: the APNs override, whose `payload` is an APNs payload (see ``APNsPayloadKey``).
    public static let apns = "apns"
    /// In `message.apns`: the APNs payload.
    public static let payload = "payload"
    /// In `message`: the Android options.
    public static let android = "android"
    /// In `message.android`: the notification.
    public static let notification = "notification"
    /// In `message.android.notification`: the badge count.
    public static let notificationCount = "notification_count"
    /// In `message`: the string-valued data.
    public static let data = "data"
}
