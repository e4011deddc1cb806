import BadgeCore
import Testing

@testable import BadgeDelivery

@Suite("Provider answers")
struct ProviderResponseTests {
    private func classify(
        _ provider: PushProvider, _ status: Int, _ body: String, retryAfter: String? = nil
    )
        -> ProviderResponse
    {
        ProviderResponse.classify(provider: provider, status: status, body: Array(body.utf8), retryAfter: retryAfter)
    }

    @Test func apns() {
        #expect(classify(.apns, 200, "") == .accepted)
        #expect(classify(.apns, 410, #"{"reason":"Unregistered","timestamp":1}"#) == .deadToken(reason: "Unregistered"))
        #expect(classify(.apns, 400, #"{"reason":"BadDeviceToken"}"#) == .deadToken(reason: "BadDeviceToken"))
        #expect(classify(.apns, 400, #"{"reason":"PayloadTooLarge"}"#) == .rejected(reason: "PayloadTooLarge"))
        #expect(
            classify(.apns, 429, #"{"reason":"TooManyRequests"}"#, retryAfter: "3")
                == .retry(reason: "TooManyRequests", retryAfterSeconds: 3))
        #expect(classify(.apns, 503, "") == .retry(reason: "HTTP 503", retryAfterSeconds: nil))
        #expect(classify(.apns, 500, "not json") == .retry(reason: "HTTP 500", retryAfterSeconds: nil))
    }

    @Test func fcm() {
        let unregistered = #"""
            {"error":{"code":404,"message":"gone","status":"NOT_FOUND","details":[
            {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}
            """#
        #expect(classify(.fcm, 200, #"{"name":"projects/p/messages/1"}"#) == .accepted)
        #expect(classify(.fcm, 404, unregistered) == .deadToken(reason: "UNREGISTERED"))
        #expect(
            classify(.fcm, 400, #"{"error":{"code":400,"status":"INVALID_ARGUMENT"}}"#)
                == .rejected(reason: "INVALID_ARGUMENT"))
        #expect(
            classify(.fcm, 429, #"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#, retryAfter: "10")
                == .retry(reason: "RESOURCE_EXHAUSTED", retryAfterSeconds: 10))
        #expect(
            classify(.fcm, 503, #"{"error":{"code":503,"status":"UNAVAILABLE"}}"#)
                == .retry(reason: "UNAVAILABLE", retryAfterSeconds: nil))
    }
}
