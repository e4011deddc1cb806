/// The event id of an API write made with an `Idempotency-Key` (contract 7.2): a name-based UUID of the user and
/// the key, so a retried request carries the same id (and takes effect once, as any duplicate publish), and two
/// users' keys never give the same id.
public enum IdempotentEventID {
    /// The namespace of API write ids (`6B3F2A1C-5D4E-4F7A-9C8B-1E2D3F4A5B6C`, chosen once).
    static let namespace: [UInt8] = [
        0x6B, 0x3F, 0x2A, 0x1C, 0x5D, 0x4E, 0x4F, 0x7A, 0x9C, 0x8B, 0x1E, 0x2D, 0x3F, 0x4A, 0x5B, 0x6C,
    ]

    /// The id of `user`'s write with idempotency `key`.
    public static func make(user: String, key: String) -> String {
        NameBasedUUID.make(namespace: namespace, name: "write|\(user.utf8.count)|\(user)|\(key)")
    }
}
