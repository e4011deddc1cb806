import BadgeWire
import Foundation

/// One recorded push, as `GET /deliveries` lists it.
public struct ReceivedPush: Sendable, Equatable {
    /// The sequence number: from 1, increasing for the sink's whole life, never reused.
    public let seq: Int
    /// The service the push was addressed to.
    public let provider: PushProvider
    /// The device token: from the APNs path, or FCM's `message.token` (empty when it had none).
    public let token: String
    /// The request headers, names lowercased; repeated headers joined with ", ". Credential headers
    /// (`authorization`, `proxy-authorization`) are never among them: see ``authorization``.
    public let headers: [String: String]
    /// What the sink checked of the request's `authorization` header (shown as `headers.authorization`); nil
    /// when it had none.
    public let authorization: RecordedAuthorization?
    /// The request body as received.
    public let body: [UInt8]
    /// Whether ``body`` is one valid JSON text (embedded as is in `payload`; otherwise embedded as a string).
    public let bodyIsJSON: Bool
    /// The HTTP status the push was answered with.
    public let status: Int
    /// Nil on success; else the APNs reason or the FCM error code sent.
    public let reason: String?
    /// When the push was received, to the millisecond.
    public let receivedAt: Date
    /// The HTTP version it came over: `"2"` or `"1.1"`.
    public let httpVersion: String

    /// Creates a received push.
    public init(
        seq: Int,
        provider: PushProvider,
        token: String,
        headers: [String: String],
        authorization: RecordedAuthorization? = nil,
        body: [UInt8],
        bodyIsJSON: Bool,
        status: Int,
        reason: String?,
        receivedAt: Date,
        httpVersion: String = "1.1"
    ) {
        self.seq = seq
        self.provider = provider
        self.token = token
        self.headers = headers
        self.authorization = authorization
        self.body = body
        self.bodyIsJSON = bodyIsJSON
        self.status = status
        self.reason = reason
        self.receivedAt = receivedAt
        self.httpVersion = httpVersion
    }

    /// The body as text (ill-formed UTF-8 replaced).
    public var bodyText: String { String(decoding: self.body, as: UTF8.self) }
}
