/// Who caused an event: `{"id", "name", "username"?}`.
public struct EventActor: Sendable, Equatable, Hashable {
    /// The actor's user id (1–128 chars of `[A-Za-z0-9._:@-]`).
    public var id: String
    /// The display name (1–200 characters), used in alert texts.
    public var name: String
    /// The optional handle (at most 200 characters).
    public var username: String?

    /// Creates an actor.
    public init(id: String, name: String, username: String? = nil) {
        self.id = id
        self.name = name
        self.username = username
    }
}
