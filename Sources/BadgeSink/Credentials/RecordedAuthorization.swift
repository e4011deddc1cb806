import BadgeWire
import Foundation

/// What the sink records of a push's `authorization` header: what it checked of the credential, never the
/// credential itself (contract section 6). `GET /deliveries` shows it as `headers.authorization`:
/// `{"scheme": "bearer", "verified": true|false, "key_id"?, "issuer"?, "issued_at"?}`.
public struct RecordedAuthorization: Sendable, Hashable {
    /// `bearer`, or `other` for a header that is not a bearer credential (its text is not kept either).
    public var scheme: String
    /// Whether the sink checked the credential and accepted it. False when it refused it, and when the sink checks
    /// none for the provider (started without its keys): then the other fields are read from the token unverified.
    public var verified: Bool
    /// APNs: the provider token's key id (`kid`). FCM: the key id of the assertion the access token was issued for,
    /// when it named one.
    public var keyID: String?
    /// APNs: the provider token's issuer (`iss`, the team id). FCM: the service account (the assertion's `iss`)
    /// the sink issued the access token to.
    public var issuer: String?
    /// APNs: the provider token's `iat`. FCM: when the sink issued the access token.
    public var issuedAt: Date?
    /// The app of the sink's configuration the push was for (by its key id, or its FCM project); nil when the sink
    /// plays no apps or none matched.
    public var app: String?

    /// Creates a record of a checked credential.
    public init(
        scheme: String = RecordedAuthorization.bearer, verified: Bool, keyID: String? = nil, issuer: String? = nil,
        issuedAt: Date? = nil
    ) {
        self.scheme = scheme
        self.verified = verified
        self.keyID = keyID
        self.issuer = issuer
        self.issuedAt = issuedAt
    }

    /// The scheme of a bearer credential.
    public static let bearer = "bearer"
    /// The scheme recorded for any other `authorization` header.
    public static let other = "other"

    /// The credential of a bearer `authorization` header value (`Bearer <credential>`, the scheme in any case);
    /// nil for any other value.
    static func bearerCredential(of header: String) -> Substring? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == Self.bearer else { return nil }
        return parts[1]
    }

    /// An unverified record of an `authorization` header value: its scheme only.
    static func unverified(_ header: String) -> RecordedAuthorization {
        let scheme = header.split(separator: " ", maxSplits: 1).first?.lowercased() == Self.bearer
        return RecordedAuthorization(scheme: scheme ? Self.bearer : Self.other, verified: false)
    }

    /// A token's `iat` (seconds since the epoch) as a date, when it is one that can be shown (years 1970 to 9999).
    static func date(seconds: Int64?) -> Date? {
        guard let seconds, (0...253_402_300_799).contains(seconds) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Writes the JSON object `GET /deliveries` shows.
    func write(into writer: inout JSONWriter) {
        writer.raw("{\"scheme\":")
        writer.string(self.scheme)
        writer.raw(self.verified ? ",\"verified\":true" : ",\"verified\":false")
        if let keyID {
            writer.raw(",\"key_id\":")
            writer.string(keyID)
        }
        if let issuer {
            writer.raw(",\"issuer\":")
            writer.string(issuer)
        }
        if let issuedAt {
            writer.raw(",\"issued_at\":\"")
            Timestamp(millisecondsSinceEpoch: Timestamp.milliseconds(of: issuedAt))
                .writeRFC3339Milliseconds(into: &writer.bytes)
            writer.raw("\"")
        }
        if let app {
            writer.raw(",\"app\":")
            writer.string(app)
        }
        writer.raw("}")
    }
}
