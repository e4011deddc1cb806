/// The APNs environment of a device token.
public enum APNsEnvironment: String, CaseIterable, Sendable {
    /// `api.push.apple.com`.
    case production
    /// `api.sandbox.push.apple.com`.
    case sandbox
}
