import BadgeCore
import Foundation

/// The classification of one provider answer, decided from its status code and JSON error body.
///
/// Pure: no I/O, tested directly.
public enum ProviderResponse: Sendable, Equatable {
    case accepted
    case deadToken(reason: String)
    case rejected(reason: String)
    /// Throttled or a server error: try again later (after `retryAfterSeconds` if the provider said so).
    case retry(reason: String, retryAfterSeconds: Int?)
    /// Authentication or authorisation refused (401, 403): our configuration, not the push, is wrong.
    case configurationError(reason: String)

    /// Classifies an APNs or FCM v1 answer.
    public static func classify(
        provider: PushProvider,
        status: Int,
        body: [UInt8],
        retryAfter: String?
    ) -> ProviderResponse {
        if (200..<300).contains(status) { return .accepted }
        let json = try? JSONValue.parse(body)
        let retryAfterSeconds = retryAfter.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        switch provider {
        case .apns:
            let reason = json?["reason"]?.stringValue ?? "HTTP \(status)"
            if status == 410 || (status == 400 && reason == "BadDeviceToken") || reason == "Unregistered" {
                return .deadToken(reason: reason)
            }
            if status == 429 || status >= 500 { return .retry(reason: reason, retryAfterSeconds: retryAfterSeconds) }
            if status == 401 || status == 403 { return .configurationError(reason: reason) }
            return .rejected(reason: reason)
        case .fcm:
            let error = json?["error"]
            var code = error?["status"]?.stringValue ?? "HTTP \(status)"
            if let details = error?["details"]?.arrayValue {
                for detail in details {
                    if let errorCode = detail["errorCode"]?.stringValue { code = errorCode }
                }
            }
            if code == "UNREGISTERED" { return .deadToken(reason: code) }
            if status == 429 || status >= 500 || code == "UNAVAILABLE" || code == "INTERNAL"
                || code == "QUOTA_EXCEEDED"
            {
                return .retry(reason: code, retryAfterSeconds: retryAfterSeconds)
            }
            if status == 401 || status == 403 { return .configurationError(reason: code) }
            return .rejected(reason: code)
        }
    }
}
