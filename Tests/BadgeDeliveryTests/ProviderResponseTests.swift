import BadgeCore
import BadgeWire
import Testing

@testable import BadgeDelivery

/// One case per row of the classification tables in ``ProviderResponse``'s documentation.
@Suite("Provider answers")
struct ProviderResponseTests {
    private static func classify(
        _ provider: PushProvider, _ status: Int, _ body: String, retryAfter: String? = nil
    ) -> ProviderResponse {
        ProviderResponse.classify(provider: provider, status: status, body: Array(body.utf8), retryAfter: retryAfter)
    }

    private static func apns(_ status: Int, _ reason: String) -> ProviderResponse {
        classify(.apns, status, #"{"reason":"\#(reason)"}"#)
    }

    @Test func apnsAccepted() {
        #expect(Self.classify(.apns, 200, "") == .accepted)
    }

    @Test(arguments: [
        (410, "Unregistered"), (410, "ExpiredToken"), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"),
    ])
    func apnsTokenGone(status: Int, reason: String) {
        #expect(Self.apns(status, reason) == .deadToken(reason: reason))
    }

    @Test func apns410KeepsItsTimestampOnlyWhenItIsOne() {
        let body = Array(#"{"reason":"Unregistered","timestamp":1795000000123}"#.utf8)
        #expect(
            ProviderResponse.classify(provider: .apns, status: 410, body: body, retryAfter: nil)
                == .deadToken(reason: "Unregistered", timestampMilliseconds: 1_795_000_000_123))
        let text = Array(#"{"reason":"Unregistered","timestamp":"yesterday"}"#.utf8)
        #expect(
            ProviderResponse.classify(provider: .apns, status: 410, body: text, retryAfter: nil)
                == .deadToken(reason: "Unregistered"))
        // Only a 410 carries one.
        let bad = Array(#"{"reason":"BadDeviceToken","timestamp":1795000000123}"#.utf8)
        #expect(
            ProviderResponse.classify(provider: .apns, status: 400, body: bad, retryAfter: nil)
                == .deadToken(reason: "BadDeviceToken"))
    }

    @Test func apns410WithoutABodyIsATokenGoneToo() {
        #expect(Self.classify(.apns, 410, "") == .deadToken(reason: "HTTP 410"))
    }

    @Test(arguments: [
        (429, "TooManyRequests"), (500, "InternalServerError"), (503, "ServiceUnavailable"), (503, "Shutdown"),
        (502, "BadGateway"), (400, "IdleTimeout"),
    ])
    func apnsRetry(status: Int, reason: String) {
        #expect(Self.apns(status, reason) == .retry(reason: reason, retryAfterSeconds: nil))
    }

    @Test func apnsRetryHonoursRetryAfterAndSurvivesABodyThatIsNotJSON() {
        #expect(
            Self.classify(.apns, 429, #"{"reason":"TooManyRequests"}"#, retryAfter: " 3 ")
                == .retry(reason: "TooManyRequests", retryAfterSeconds: 3))
        #expect(Self.classify(.apns, 500, "<html>oops</html>") == .retry(reason: "HTTP 500", retryAfterSeconds: nil))
    }

    @Test func apnsExpiredProviderTokenIsRenewedOnce() {
        #expect(Self.apns(403, "ExpiredProviderToken") == .credentialExpired(reason: "ExpiredProviderToken"))
    }

    @Test(arguments: [
        (403, "InvalidProviderToken"), (403, "MissingProviderToken"), (403, "BadCertificate"),
        (403, "BadCertificateEnvironment"), (403, "Forbidden"), (403, "SomethingNew"), (401, "Unauthorized"),
        (400, "BadTopic"), (400, "TopicDisallowed"), (400, "MissingTopic"), (404, "BadPath"),
        (405, "MethodNotAllowed"), (429, "TooManyProviderTokenUpdates"),
    ])
    func apnsConfigurationError(status: Int, reason: String) {
        #expect(Self.apns(status, reason) == .configurationError(reason: reason))
    }

    @Test func apnsPayloadTooLargeIsCountedApart() {
        #expect(Self.apns(413, "PayloadTooLarge") == .payloadTooLarge(reason: "PayloadTooLarge"))
        #expect(Self.classify(.apns, 413, "") == .payloadTooLarge(reason: "HTTP 413"))
    }

    @Test(arguments: [
        "BadCollapseId", "BadExpirationDate", "BadMessageId", "BadPriority", "DuplicateHeaders", "InvalidPushType",
        "MissingDeviceToken", "PayloadEmpty",
    ])
    func apnsRejected(reason: String) {
        #expect(Self.apns(400, reason) == .rejected(reason: reason))
    }

    private static func fcm(
        _ status: Int, _ googleStatus: String, errorCode: String? = nil, field: String? = nil
    )
        -> ProviderResponse
    {
        var details: [String] = []
        if let errorCode {
            details.append(
                #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#)
        }
        if let field {
            details.append(
                #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"\#(field)","#
                    + #""description":"Invalid"}]}"#)
        }
        return classify(
            .fcm, status,
            #"{"error":{"code":\#(status),"message":"m","status":"\#(googleStatus)","details":[\#(details.joined(separator: ","))]}}"#,
            retryAfter: "7")
    }

    @Test func fcmAccepted() {
        #expect(Self.classify(.fcm, 200, #"{"name":"projects/p/messages/1"}"#) == .accepted)
    }

    @Test func fcmTokenGone() {
        #expect(Self.fcm(404, "NOT_FOUND", errorCode: "UNREGISTERED") == .deadToken(reason: "UNREGISTERED"))
        #expect(
            Self.fcm(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH")
                == .deadToken(reason: "SENDER_ID_MISMATCH"))
    }

    @Test func fcmInvalidArgumentDropsTheTokenOnlyWhenTheTokenIsWhatIsInvalid() {
        #expect(
            Self.fcm(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.token")
                == .deadToken(reason: "INVALID_ARGUMENT (message.token)"))
        #expect(
            Self.fcm(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.android.ttl")
                == .rejected(reason: "INVALID_ARGUMENT"))
        #expect(Self.fcm(400, "INVALID_ARGUMENT") == .rejected(reason: "INVALID_ARGUMENT"))
    }

    @Test func fcmRetryWithRetryAfter() {
        #expect(
            Self.fcm(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED")
                == .retry(reason: "QUOTA_EXCEEDED", retryAfterSeconds: 7))
        #expect(
            Self.fcm(503, "UNAVAILABLE", errorCode: "UNAVAILABLE")
                == .retry(reason: "UNAVAILABLE", retryAfterSeconds: 7))
        #expect(Self.fcm(500, "INTERNAL", errorCode: "INTERNAL") == .retry(reason: "INTERNAL", retryAfterSeconds: 7))
        #expect(Self.fcm(502, "UNKNOWN") == .retry(reason: "UNKNOWN", retryAfterSeconds: 7))
        #expect(Self.classify(.fcm, 503, "") == .retry(reason: "HTTP 503", retryAfterSeconds: nil))
    }

    @Test func fcmUnauthenticatedRenewsTheAccessTokenOnce() {
        #expect(Self.fcm(401, "UNAUTHENTICATED") == .credentialExpired(reason: "UNAUTHENTICATED"))
    }

    @Test func fcmConfigurationErrors() {
        #expect(
            Self.fcm(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR")
                == .configurationError(reason: "THIRD_PARTY_AUTH_ERROR"))
        #expect(Self.fcm(403, "PERMISSION_DENIED") == .configurationError(reason: "PERMISSION_DENIED"))
        #expect(Self.fcm(404, "NOT_FOUND") == .configurationError(reason: "NOT_FOUND"))
    }
}
