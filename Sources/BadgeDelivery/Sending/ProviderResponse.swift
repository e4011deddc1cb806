import BadgeCore
import BadgeWire
import Foundation

/// The classification of one provider answer, decided from its status code and JSON error body.
///
/// Pure: no I/O, tested directly, one test per row of the tables below.
///
/// APNs (`{"reason": …}`):
///
/// | answer | class | what happens |
/// | --- | --- | --- |
/// | 200 | accepted | recorded as sent |
/// | 410 `Unregistered`, 410 `ExpiredToken`, 400 `BadDeviceToken` | token gone | the device is deactivated; a 410's `timestamp` (ms) is kept: a registration before it does not reactivate the token |
/// | 400 `DeviceTokenNotForTopic` | token gone | the device is deactivated: its token belongs to another app |
/// | 429 `TooManyRequests`, 500, 503 (`ServiceUnavailable`, `Shutdown`), any 5xx, 400 `IdleTimeout` | retry | next attempt with backoff, `Retry-After` honoured |
/// | 403 `ExpiredProviderToken` | credential expired | re-sign the token once and retry at once |
/// | 403 (`InvalidProviderToken`, `MissingProviderToken`, `BadCertificate`, `BadCertificateEnvironment`, `Forbidden`, …), 401, 400 `BadTopic`, `TopicDisallowed`, `MissingTopic`, 404 `BadPath`, 405, 429 `TooManyProviderTokenUpdates` | configuration error | the push is kept and retried with backoff; the worker reports it loudly and is not ready |
/// | 413 `PayloadTooLarge` | payload too large | dropped and counted: impossible by construction (bodies are fitted to 4 KB) |
/// | any other 4xx (`BadCollapseId`, `BadExpirationDate`, `BadMessageId`, `BadPriority`, `DuplicateHeaders`, `InvalidPushType`, `MissingDeviceToken`, `PayloadEmpty`, …) | rejected | dropped with its reason: the same request would be refused again |
///
/// FCM HTTP v1 (`{"error": {"status": …, "details": [{"errorCode": …}, {"fieldViolations": …}]}}`):
///
/// | answer | class |
/// | --- | --- |
/// | `UNREGISTERED`, `SENDER_ID_MISMATCH` | token gone |
/// | `INVALID_ARGUMENT` about `message.token` | token gone |
/// | `INVALID_ARGUMENT` about anything else | rejected |
/// | `QUOTA_EXCEEDED`, `UNAVAILABLE`, `INTERNAL`, 429, any 5xx | retry (`Retry-After` honoured) |
/// | 401 (`UNAUTHENTICATED`) | credential expired: fetch a new access token once and retry at once |
/// | `THIRD_PARTY_AUTH_ERROR`, 403 (`PERMISSION_DENIED`), 404 without `UNREGISTERED` | configuration error |
public enum ProviderResponse: Sendable, Equatable {
    case accepted
    /// The device token will never work again (unregistered, invalid, or another app's): deactivate the device.
    /// `timestampMilliseconds`: APNs's `timestamp` of a 410, the last time it confirmed the token was no longer
    /// valid (milliseconds since the epoch, by Apple's clock).
    case deadToken(reason: String, timestampMilliseconds: Int64? = nil)
    /// The request was refused for good and the same request would be refused again: dropped, with its reason.
    case rejected(reason: String)
    /// The payload was too large: cannot happen with bodies this worker builds, so counted apart when seen.
    case payloadTooLarge(reason: String)
    /// Throttled or a server error: try again later (after `retryAfterSeconds` if the provider said so).
    case retry(reason: String, retryAfterSeconds: Int?)
    /// The credential the request carried has expired (APNs `ExpiredProviderToken`, FCM 401): renew it once and
    /// try again at once.
    case credentialExpired(reason: String)
    /// Our credentials or configuration were refused: the push is kept, the worker reports it loudly.
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
            let response = classifyAPNs(
                status: status, reason: json?["reason"]?.stringValue ?? "HTTP \(status)",
                retryAfterSeconds: retryAfterSeconds)
            if status == 410, case .deadToken(let reason, _) = response,
                let timestamp = json?["timestamp"]?.int64Value, timestamp > 0
            {
                return .deadToken(reason: reason, timestampMilliseconds: timestamp)
            }
            return response
        case .fcm:
            return classifyFCM(status: status, error: json?["error"], retryAfterSeconds: retryAfterSeconds)
        }
    }

    /// The APNs reasons that name a problem with our credentials or configuration, not with the push.
    static let apnsConfigurationReasons: Set<String> = [
        "BadTopic", "TopicDisallowed", "MissingTopic", "BadPath", "MethodNotAllowed", "TooManyProviderTokenUpdates",
        "InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment", "Forbidden",
        "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken",
    ]

    private static func classifyAPNs(status: Int, reason: String, retryAfterSeconds: Int?) -> ProviderResponse {
        switch (status, reason) {
        case (410, _), (_, "Unregistered"), (_, "ExpiredToken"), (_, "BadDeviceToken"), (_, "DeviceTokenNotForTopic"):
            return .deadToken(reason: reason)
        case (_, "ExpiredProviderToken"):
            return .credentialExpired(reason: reason)
        case (_, _) where apnsConfigurationReasons.contains(reason):
            return .configurationError(reason: reason)
        case (413, _), (_, "PayloadTooLarge"):
            return .payloadTooLarge(reason: reason)
        case (429, _), (500...599, _), (_, "IdleTimeout"):
            return .retry(reason: reason, retryAfterSeconds: retryAfterSeconds)
        case (401, _), (403, _), (404, _), (405, _):
            return .configurationError(reason: reason)
        default:
            return .rejected(reason: reason)
        }
    }

    private static func classifyFCM(status: Int, error: JSONValue?, retryAfterSeconds: Int?) -> ProviderResponse {
        let googleStatus = error?["status"]?.stringValue
        var code = googleStatus ?? "HTTP \(status)"
        var aboutToken = false
        for detail in error?["details"]?.arrayValue ?? [] {
            if let errorCode = detail["errorCode"]?.stringValue { code = errorCode }
            for violation in detail["fieldViolations"]?.arrayValue ?? [] {
                if violation["field"]?.stringValue == "message.token" { aboutToken = true }
            }
        }
        switch code {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .deadToken(reason: code)
        case "INVALID_ARGUMENT":
            return aboutToken ? .deadToken(reason: "INVALID_ARGUMENT (message.token)") : .rejected(reason: code)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL":
            return .retry(reason: code, retryAfterSeconds: retryAfterSeconds)
        case "THIRD_PARTY_AUTH_ERROR":
            return .configurationError(reason: code)
        default:
            break
        }
        switch status {
        case 429, 500...599: return .retry(reason: code, retryAfterSeconds: retryAfterSeconds)
        case 401: return .credentialExpired(reason: code)
        case 403, 404: return .configurationError(reason: code)
        case 413: return .payloadTooLarge(reason: code)
        default: return .rejected(reason: code)
        }
    }
}
