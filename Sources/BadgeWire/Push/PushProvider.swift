/// The push service that delivers to a device.
public enum PushProvider: String, CaseIterable, Sendable {
    /// Apple Push Notification service.
    case apns
    /// Firebase Cloud Messaging (HTTP v1).
    case fcm
}
