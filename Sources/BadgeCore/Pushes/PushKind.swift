/// What a push shows.
public enum PushKind: Sendable, Equatable {
    /// An alert for a notification or chat message: title, body, sound, plus the badge.
    case alert(Event)
    /// Only the badge (and counts): sent after read-state changes and on device registration.
    case badgeOnly

    /// Whether this is an alert.
    public var isAlert: Bool {
        if case .alert = self { return true }
        return false
    }
}
