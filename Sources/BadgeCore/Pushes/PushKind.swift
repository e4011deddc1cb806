/// What a push shows.
public enum PushKind: Sendable, Equatable {
    /// An alert for a notification or chat message: title, body, sound, plus the badge. Indirect: the event is
    /// boxed once and the pushes of one event to many devices share the box (a push is a pointer's worth of it,
    /// not a copy of the event's 259 bytes and a retain of each of its strings).
    indirect case alert(Event)
    /// Only the badge (and counts): sent after read-state changes and on device registration.
    case badgeOnly

    /// Whether this is an alert.
    public var isAlert: Bool {
        if case .alert = self { return true }
        return false
    }
}
