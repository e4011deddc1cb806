import BadgeWire
import Foundation

/// What the sink answers a push with, as decided by ``SinkState/record(provider:token:headers:body:receivedAt:)``.
public struct PushAnswer: Sendable, Equatable {
    /// The `seq` the push was recorded under.
    public let seq: Int
    /// The service the push was addressed to.
    public let provider: PushProvider
    /// The HTTP status to send: 200, an APNs error status, or for FCM the translated FCM status.
    public let status: Int
    /// Nil on success; else the APNs reason (`Unregistered`) or the FCM error code (`UNREGISTERED`).
    public let reason: String?
    /// When the push was received, to the millisecond.
    public let receivedAt: Date
    /// How long to wait before answering (a fault's `delay_ms`), in milliseconds.
    public let delayMilliseconds: Int
    /// When set, break the connection instead of answering (a connection fault); ``status`` is then 0.
    public let connection: Fault.Connection?

    /// Creates an answer.
    public init(
        seq: Int, provider: PushProvider, status: Int, reason: String?, receivedAt: Date, delayMilliseconds: Int = 0,
        connection: Fault.Connection? = nil
    ) {
        self.seq = seq
        self.provider = provider
        self.status = status
        self.reason = reason
        self.receivedAt = receivedAt
        self.delayMilliseconds = delayMilliseconds
        self.connection = connection
    }

    /// Whether the push was accepted.
    public var isSuccess: Bool { self.status == 200 }

    /// The JSON body APNs sends: empty on success, `{"reason": …}` on error, plus `timestamp` (ms) with 410.
    public var apnsBody: [UInt8] {
        guard !self.isSuccess else { return [] }
        var writer = JSONWriter(capacity: 64)
        writer.raw("{\"reason\":")
        writer.string(self.reason ?? Fault.defaultReason(status: self.status))
        if self.status == 410 {
            writer.raw(",\"timestamp\":")
            writer.int(Int(Timestamp.milliseconds(of: self.receivedAt)))
        }
        writer.raw("}")
        return writer.bytes
    }

    /// The JSON body FCM sends: `{"name": "projects/{project}/messages/{id}"}` on success, else its error.
    public func fcmBody(project: String) -> [UInt8] {
        guard self.isSuccess else {
            return FCMError(status: self.status, errorCode: self.reason ?? "INTERNAL").jsonBody
        }
        var writer = JSONWriter(capacity: 64)
        writer.raw("{\"name\":")
        writer.string("projects/\(project)/messages/\(self.seq)")
        writer.raw("}")
        return writer.bytes
    }
}
