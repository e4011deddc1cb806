/// The push service that a delivery was addressed to.
public enum PushProvider: String, Sendable, Hashable, CaseIterable {
    /// Apple Push Notification service: `POST /3/device/{token}`.
    case apns
    /// Firebase Cloud Messaging HTTP v1: `POST /v1/projects/{project}/messages:send`.
    case fcm
}
