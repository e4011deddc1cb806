/// The push service that delivers to a device.
public enum PushProvider: String, CaseIterable, Sendable {
    /// Apple Push Notification service.
    case apns
    /// Firebase Cloud Messaging (HTTP v1).
    case fcm
}

extension PushProvider {
    /// The service's name as people write it: `APNs`, `FCM`.
    public var displayName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        }
    }
}
