/// The `preferences` field of a `preferences_updated` event; `nil` fields are left unchanged.
public struct PreferencesChange: Sendable, Equatable, Hashable {
    /// `false` makes every later push carry badge 0.
    public var badgeEnabled: Bool?
    /// `false` replaces user-written text in alerts with a generic body.
    public var previews: Bool?

    /// Creates a change.
    public init(badgeEnabled: Bool? = nil, previews: Bool? = nil) {
        self.badgeEnabled = badgeEnabled
        self.previews = previews
    }
}
